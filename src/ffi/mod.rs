//! The C ABI. STUB.
