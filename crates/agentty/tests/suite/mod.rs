mod cli;
mod client;
mod sandbox;
mod shells;
mod tasks;
mod terminal;
