mod cli;
mod client;
mod entry;
mod raw;
mod sandbox;
mod shells;
mod tasks;
mod terminal;
