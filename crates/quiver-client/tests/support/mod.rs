pub mod fake_server;
