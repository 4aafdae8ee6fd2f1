mod cli;
mod client;
mod raw;
mod sandbox;
mod shells;
mod tasks;
mod terminal;
