#![allow(dead_code)] // each test binary uses part of its support

pub mod real_server;
