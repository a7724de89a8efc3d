//! Seeds derived from a seed and a tag.

/// A seed for the purpose `tag`, derived from `seed`: FNV-1a over the tag, folded into the seed.
/// Stable across platforms and releases, so seeded runs repeat wherever the arithmetic does.
pub fn mix(seed: u64, tag: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325 ^ seed.wrapping_mul(0x9E3779B97F4A7C15);
    for b in tag.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::mix;

    #[test]
    fn tags_and_seeds_give_different_streams() {
        assert_eq!(mix(3, "a"), mix(3, "a"));
        assert_ne!(mix(3, "a"), mix(3, "b"));
        assert_ne!(mix(3, "a"), mix(4, "a"));
        // a fixed value: the function is part of what makes runs repeat
        assert_eq!(mix(0, ""), 0xcbf29ce484222325);
    }
}
