//! The `cuda` probe: CUDA toolkits, cuDNN headers, the NVIDIA driver version and the loader
//! cache (filled in below).

use super::{Apply, Context};

/// The probe entry point (registered as `cuda`).
pub fn probe(_ctx: &Context) -> Apply {
    Box::new(|_snap| {})
}
