//! Memory planning (SPEC §4): which level every buffer lives in and why,
//! how every weight gets there, and where in its level's arena each buffer
//! sits.

pub mod offsets;
