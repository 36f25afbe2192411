//! (filled in by issue #24's work)
