mod client;
mod terminal;
