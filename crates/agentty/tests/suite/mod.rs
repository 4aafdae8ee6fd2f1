mod client;
mod sandbox;
mod terminal;
