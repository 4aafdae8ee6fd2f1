mod api;
mod boundary;
mod corpus;
mod fuzz;
mod readonly;
