//! Checks that a training run can proceed before any C is written
//! (missing-input triage, SPEC §2.4).
