//! Real test inputs (filled below).
