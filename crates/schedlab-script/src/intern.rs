//! Names that the workload model wants as `&'static str` (group names, metric sample keys),
//! interned once per distinct name for the life of the process. A process loads a handful of
//! workload files, so this holds a bounded set; interning the same file twice adds nothing.

use rustc_hash::FxHashSet;
use std::sync::{Mutex, OnceLock};

/// The interned copy of `s`.
pub fn intern(s: &str) -> &'static str {
    // Fx: a file of 100,000 groups interns several names per group, and SipHash was a fifth
    // of reading it.
    static NAMES: OnceLock<Mutex<FxHashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(s) {
        return n;
    }
    let leaked: &'static str = Box::leak(s.to_string().into_boxed_str());
    names.insert(leaked);
    leaked
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_same_name_is_interned_once() {
        let a = super::intern("sender");
        let b = super::intern(&String::from("sender"));
        assert!(std::ptr::eq(a, b));
    }
}
