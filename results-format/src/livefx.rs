//! (skeleton; filled by the results redesign)

use serde::{Deserialize, Serialize};

/// The `livefx` section of run.json (backends, notes, workers).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LivefxSection {}
