//! Audio backends behind one trait. (Being filled in.)
