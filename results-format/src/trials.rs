//! (skeleton; filled by the results redesign)
