//! Nearest-name suggestions ("did you mean 'run'?") for every name a user types: commands,
//! workloads, policies, knobs, parameters and metrics. One helper, so every message suggests
//! the same way.
//!
//! The distance is the optimal-string-alignment distance (Damerau–Levenshtein without
//! repeated edits of a substring, from the `strsim` crate clap uses for its own suggestions):
//! a swapped pair of letters (`rnu`, `eevfd`) counts one edit, where clap's Jaro similarity
//! misses short transpositions. A name is suggested only when it is within a third of the
//! typed word's length (at least one edit), so a word unlike every name gets no suggestion.

/// The candidate nearest to `word` (case-insensitively), if one is close enough to be what was
/// meant; ties go to the earlier candidate.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed = word.to_lowercase();
    // A third of the length: one edit for up to 5 letters, two for 6..8, ...
    let most = (typed.chars().count() / 3).max(1);
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        let d = strsim::osa_distance(&typed, &c.to_lowercase());
        if d == 0 && c != word {
            // Only the case differs: certainly what was meant.
            return Some(c);
        }
        if d <= most && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c).filter(|c| *c != word)
}

/// `"; did you mean 'NAME'?"` for the nearest candidate, or nothing: appended to a message
/// that already names the word and lists what is accepted.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match nearest(word, candidates) {
        Some(c) => format!("; did you mean '{c}'?"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMANDS: [&str; 4] = ["run", "sweep", "check", "compare"];

    #[test]
    fn transpositions_and_missing_letters_are_found() {
        assert_eq!(nearest("rnu", COMMANDS), Some("run"));
        assert_eq!(nearest("sweeep", COMMANDS), Some("sweep"));
        assert_eq!(
            nearest("mesaging", ["chat", "messaging"]),
            Some("messaging")
        );
        assert_eq!(nearest("eevfd", ["cfs", "eevdf", "o1"]), Some("eevdf"));
        assert_eq!(nearest("RUN", COMMANDS), Some("run"));
    }

    #[test]
    fn far_words_and_exact_names_get_no_suggestion() {
        assert_eq!(nearest("xyz", COMMANDS), None);
        assert_eq!(nearest("banana", COMMANDS), None);
        assert_eq!(nearest("run", COMMANDS), None);
        assert_eq!(nearest("", COMMANDS), None);
        assert_eq!(did_you_mean("zzz", COMMANDS), "");
        assert_eq!(did_you_mean("chek", COMMANDS), "; did you mean 'check'?");
    }

    #[test]
    fn the_nearest_of_several_wins() {
        // "nce" is one edit from "nice" and two from "cpus"/"mode".
        assert_eq!(nearest("nce", ["cpus", "mode", "nice"]), Some("nice"));
        assert_eq!(nearest("slise", ["nice", "slice"]), Some("slice"));
    }
}
