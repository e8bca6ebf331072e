//! The greedy choice made straight from the logits, for a sampler chain of the form
//! [end of turn masked] [repetition penalty] greedy: the same token llama.cpp's chain selects.
//!
//! The chain works on an array of (id, logit, p) for the whole vocabulary: filling it and
//! scanning it took about 0.45 ms per token with Qwen2.5's 151,936 tokens on this 2-core machine.
//! That is 1% of a CPU decode step, but on a GPU (a token every 1.2 ms on an H200) it was most
//! of Burrow's gap to llama-bench's decode (0.76x). Here the few tokens the chain changes get
//! their new values with the same float operations, and the first maximum of the row, read in
//! place with those values standing in, is found in one pass the compiler vectorizes (22 µs for
//! Qwen's row on this 2-core machine, against 185 µs for a copy and two passes: on an H200 that
//! took Qwen's decode from 0.83x llama-bench's to 0.96x). Under a grammar whose mask had to be
//! computed, the same choice among the tokens the mask allows reads the mask's bits beside the
//! row (14-88 µs against 840-880 µs for the masked copy and the chain's pass). Every other chain
//! (temperature, top-k) still goes through llama.cpp's samplers.

use std::collections::VecDeque;

use llama_cpp_2::token::LlamaToken;

/// What the chain does before its greedy choice, mirrored. `accept` must see every token the
/// chain accepts, so the two hold the same window.
#[derive(Debug, Clone)]
pub struct Greedy {
    /// Tokens whose logit gets `-inf` added (llama.cpp's logit-bias sampler, first in the chain).
    masked: Vec<LlamaToken>,
    /// llama.cpp's penalties sampler with no frequency or presence penalty: each token among
    /// the last `last_n` accepted has its logit divided by `repeat` (multiplied where <= 0).
    repeat: f32,
    last_n: usize,
    window: VecDeque<LlamaToken>,
    distinct: Vec<i32>,
    changed: Vec<i32>,
    /// The changed entries' indices (ascending) and values.
    values: Vec<(usize, f32)>,
    /// The grammar's mask without the entries compared on their own.
    words: Vec<u32>,
}

impl Greedy {
    /// `last_n` as llama.cpp takes it: negative is 0, and 0 (or a penalty of 1) turns the
    /// penalty off.
    pub fn new(masked: Vec<LlamaToken>, repeat: f32, last_n: i32) -> Self {
        let last_n = if repeat == 1.0 {
            0
        } else {
            usize::try_from(last_n).unwrap_or(0)
        };
        Greedy {
            masked,
            repeat,
            last_n,
            window: VecDeque::with_capacity(last_n),
            distinct: Vec::new(),
            changed: Vec::new(),
            values: Vec::new(),
            words: Vec::new(),
        }
    }

    /// The token the chain would select from `logits` (indexed by token id).
    pub fn pick(&mut self, logits: &[f32]) -> LlamaToken {
        self.change(logits);
        LlamaToken(first_max_changed(logits, &self.values) as i32)
    }

    /// The token the chain would select from `logits` with only the tokens `allowed` sets left
    /// in (a bit per token id, as llguidance's mask holds them; ids past its end are out), the
    /// others at -inf: `None` where that choice is a token at -inf (nothing allowed is left).
    /// What the chain's full pass over a masked copy of the row gave, without the copy: with a
    /// grammar whose mask is computed for most tokens, that pass and copy were most of the
    /// host's time per token.
    pub fn pick_allowed(&mut self, logits: &[f32], allowed: &[u32]) -> Option<LlamaToken> {
        self.change(logits);
        let bit = |i: usize| {
            allowed
                .get(i / 32)
                .is_some_and(|w| (w >> (i % 32)) & 1 == 1)
        };
        for (i, l) in &mut self.values {
            if !bit(*i) {
                *l = f32::NEG_INFINITY;
            }
        }
        // The changed entries and entry 0 are compared on their own, so the scan of the row
        // skips them.
        self.words.clear();
        self.words.extend_from_slice(allowed);
        for i in self.values.iter().map(|(i, _)| *i).chain([0]) {
            if let Some(w) = self.words.get_mut(i / 32) {
                *w &= !(1u32 << (i % 32));
            }
        }
        let first = match self.values.first() {
            Some(&(0, l)) => l,
            _ if bit(0) => logits.first().copied()?,
            _ => f32::NEG_INFINITY,
        };
        let mut best = Best::new(first);
        if !first.is_nan() {
            scan_allowed(logits, &self.words, &mut best);
            for &(i, l) in self.values.iter().filter(|(i, _)| *i >= 1) {
                best.offer(l, i);
            }
        }
        (best.value != f32::NEG_INFINITY).then_some(LlamaToken(best.at as i32))
    }

    /// The entries the chain changes, ascending, with their new values, into `self.values`.
    fn change(&mut self, logits: &[f32]) {
        // The few tokens the chain changes get their new values here; the row itself is read
        // in place. Copying it to change them took a third of the pick (a 600 KB copy per
        // token with Qwen's vocabulary), which on a GPU is time the GPU waits.
        self.distinct.clear();
        self.distinct.extend(self.window.iter().map(|t| t.0));
        self.distinct.sort_unstable();
        self.distinct.dedup();
        self.changed.clear();
        self.changed.extend(
            self.masked
                .iter()
                .map(|t| t.0)
                .chain(self.distinct.iter().copied()),
        );
        self.changed.sort_unstable();
        self.changed.dedup();
        self.values.clear();
        for &t in &self.changed {
            let Some(&logit) = usize::try_from(t).ok().and_then(|i| logits.get(i)) else {
                continue;
            };
            let mut l = logit;
            // The same float operations as llama.cpp's logit-bias and penalties samplers, in
            // their order: each masked entry adds -inf, then each distinct token in the window
            // is penalized once.
            for m in &self.masked {
                if m.0 == t {
                    l += f32::NEG_INFINITY;
                }
            }
            if self.distinct.binary_search(&t).is_ok() {
                if l <= 0.0 {
                    l *= self.repeat;
                } else {
                    l /= self.repeat;
                }
            }
            self.values.push((t as usize, l));
        }
    }

    pub fn accept(&mut self, token: LlamaToken) {
        if self.last_n == 0 {
            return;
        }
        if self.window.len() >= self.last_n {
            self.window.pop_front();
        }
        self.window.push_back(token);
    }
}

/// The index llama.cpp's greedy sampler selects from `v` with the entries of `changed` (indices
/// ascending, each within `v`) replacing theirs: the first that is greater than every one before
/// it, scanning from index 0 (so a NaN is never chosen, except at index 0, which nothing beats).
fn first_max_changed(v: &[f32], changed: &[(usize, f32)]) -> usize {
    let first = match (changed.first(), v.first()) {
        (Some(&(0, l)), _) => l,
        (_, Some(&x)) => x,
        (_, None) => return 0,
    };
    let mut best = Best::new(first);
    if first.is_nan() {
        return 0;
    }
    // The unchanged stretches between changed entries are scanned whole.
    let mut start = 1;
    for &(c, l) in changed.iter().filter(|(c, _)| *c >= 1) {
        best.offer_stretch(v, start, c);
        best.offer(l, c);
        start = c + 1;
    }
    best.offer_stretch(v, start, v.len());
    best.at
}

/// llama.cpp's greedy choice as a reduction: the greatest value, the lowest index among equal
/// ones, NaN never; entry 0 is where it starts, so nothing at -inf beats it and a NaN there stays.
struct Best {
    value: f32,
    at: usize,
}

impl Best {
    fn new(first: f32) -> Self {
        Best {
            value: first,
            at: 0,
        }
    }

    fn offer(&mut self, value: f32, at: usize) {
        if value > self.value || (value == self.value && at < self.at) {
            (self.value, self.at) = (value, at);
        }
    }

    /// Offers the maximum of `v[start..end]` (`end` clipped to the row).
    fn offer_stretch(&mut self, v: &[f32], start: usize, end: usize) {
        if let Some((m, i)) = v.get(start..end.min(v.len())).and_then(stretch_max) {
            self.offer(m, start + i);
        }
    }
}

/// Offers `best` every entry of `v` whose bit is set in `words`: runs of whole words with every
/// bit set are scanned as stretches (inside a JSON string most of the vocabulary is allowed),
/// words with no bit set are skipped (where only punctuation is), the rest bit by bit.
fn scan_allowed(v: &[f32], words: &[u32], best: &mut Best) {
    let mut run: Option<usize> = None;
    let flush = |run: &mut Option<usize>, end: usize, best: &mut Best| {
        if let Some(start) = run.take() {
            best.offer_stretch(v, start, end);
        }
    };
    for (n, &w) in words.iter().enumerate() {
        let base = n * 32;
        if base >= v.len() {
            break;
        }
        if w == u32::MAX {
            run.get_or_insert(base);
            continue;
        }
        flush(&mut run, base, best);
        let mut bits = w;
        while bits != 0 {
            let i = base + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if let Some(&x) = v.get(i) {
                best.offer(x, i);
            }
        }
    }
    flush(&mut run, words.len() * 32, best);
}

/// The greatest value of `v` above -inf (NaN never counts) and the first index holding it;
/// `None` when there is none, since such a stretch never beats the row's first entry. One pass
/// that the compiler vectorizes: each lane keeps its maximum and where it saw it first.
fn stretch_max(v: &[f32]) -> Option<(f32, usize)> {
    const LANES: usize = 16;
    let mut max = [f32::NEG_INFINITY; LANES];
    let mut at = [u32::MAX; LANES];
    let chunks = v.chunks_exact(LANES);
    let rest = chunks.remainder();
    for (n, c) in chunks.enumerate() {
        let base = (n * LANES) as u32;
        for k in 0..LANES {
            if c[k] > max[k] {
                max[k] = c[k];
                at[k] = base + k as u32;
            }
        }
    }
    let mut best: Option<(f32, usize)> = None;
    let lanes = max
        .iter()
        .zip(&at)
        .filter(|(_, &i)| i != u32::MAX)
        .map(|(&m, &i)| (m, i as usize));
    let tail = rest
        .iter()
        .enumerate()
        .filter(|(_, &x)| x > f32::NEG_INFINITY)
        .map(|(i, &x)| (x, v.len() - rest.len() + i));
    for (m, i) in lanes.chain(tail) {
        match best {
            Some((b, j)) if m < b || (m == b && i > j) => {}
            _ => best = Some((m, i)),
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use llama_cpp_2::sampling::LlamaSampler;
    use llama_cpp_2::token::data::LlamaTokenData;
    use llama_cpp_2::token::data_array::LlamaTokenDataArray;
    use llama_cpp_2::token::logit_bias::LlamaLogitBias;

    /// The chain `build_chain` makes for a greedy request, as llama.cpp runs it.
    fn chain(n_vocab: i32, masked: &[LlamaToken], repeat: f32, last_n: i32) -> LlamaSampler {
        let mut samplers = Vec::new();
        if !masked.is_empty() {
            let biases: Vec<_> = masked
                .iter()
                .map(|&t| LlamaLogitBias::new(t, f32::NEG_INFINITY))
                .collect();
            samplers.push(LlamaSampler::logit_bias(n_vocab, &biases));
        }
        if repeat != 1.0 {
            samplers.push(LlamaSampler::penalties(n_vocab, last_n, repeat, 0.0, 0.0));
        }
        samplers.push(LlamaSampler::greedy());
        LlamaSampler::chain(samplers, true)
    }

    fn chain_pick(chain: &mut LlamaSampler, logits: &[f32]) -> LlamaToken {
        let data = logits
            .iter()
            .enumerate()
            .map(|(i, &l)| LlamaTokenData::new(LlamaToken(i as i32), l, 0.0))
            .collect();
        let mut cur = LlamaTokenDataArray::new(data, false);
        chain.apply(&mut cur);
        cur.selected_token().expect("greedy selects a token")
    }

    /// A small deterministic generator: the test needs many varied rows, not a crate.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u32 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) as u32
        }
        /// Few distinct values, so ties and repeated tokens are common.
        fn logit(&mut self) -> f32 {
            match self.next() % 50 {
                0 => f32::NEG_INFINITY,
                1 => 0.0,
                2 => -0.0,
                n => (n as f32 - 25.0) / 4.0,
            }
        }

        /// A row of logits; some steps put a NaN first or anywhere, or make the row flat.
        fn row(&mut self, n_vocab: i32, step: usize) -> Vec<f32> {
            let mut logits: Vec<f32> = (0..n_vocab).map(|_| self.logit()).collect();
            match step % 10 {
                3 => logits[0] = f32::NAN,
                4 => logits[(self.next() % n_vocab as u32) as usize] = f32::NAN,
                5 => logits.iter_mut().for_each(|l| *l = -1.0),
                _ => {}
            }
            logits
        }
    }

    /// llama.cpp's chain and the fast path for the same request: the end of turn masked (three
    /// tokens, at both ends of the vocabulary) or not, and the repetition penalty.
    fn pair(n_vocab: i32, repeat: f32, last_n: i32, mask: bool) -> (LlamaSampler, Greedy) {
        let masked: Vec<LlamaToken> = if mask {
            vec![LlamaToken(0), LlamaToken(5), LlamaToken(n_vocab - 1)]
        } else {
            Vec::new()
        };
        (
            chain(n_vocab, &masked, repeat, last_n),
            Greedy::new(masked, repeat, last_n),
        )
    }

    /// Issue 20: the fast greedy path must pick what llama.cpp's chain picks, token after token,
    /// with the end of turn masked, the repetition penalty's window filling and sliding, ties
    /// (the first index wins), logits at and below zero, and -inf and NaN in the row.
    #[test]
    fn the_greedy_path_picks_what_the_llama_cpp_chain_picks() {
        let mut rng = Lcg(7);
        for (case, &(n_vocab, repeat, last_n, mask)) in [
            (37, 1.0, 64, false),
            (37, 1.0, 64, true),
            (40, 1.15, 64, false),
            (40, 1.15, 8, true),
            (300, 1.3, 3, true),
            (300, 0.8, 16, false),
            (1000, 1.15, 0, true),
            (1000, 1.15, -1, false),
            (5003, 1.15, 256, true),
        ]
        .iter()
        .enumerate()
        {
            let (mut llama, mut fast) = pair(n_vocab, repeat, last_n, mask);
            for step in 0..200 {
                let logits = rng.row(n_vocab, step);
                let want = chain_pick(&mut llama, &logits);
                let got = fast.pick(&logits);
                assert_eq!(got, want, "case {case}, step {step}: {logits:?}");
                // Steer the window towards tokens that come back, as a looping model's do.
                let accepted = if step % 3 == 0 {
                    LlamaToken((rng.next() % 6) as i32)
                } else {
                    want
                };
                llama.accept(accepted);
                fast.accept(accepted);
            }
        }
    }

    /// What the worker did for a grammar's mask before `pick_allowed`: the masked-out entries set
    /// to -inf in the full array, the chain applied, and its choice kept unless it is at -inf.
    fn chain_pick_allowed(
        chain: &mut LlamaSampler,
        logits: &[f32],
        allowed: &[u32],
    ) -> Option<LlamaToken> {
        let bit = |i: usize| {
            allowed
                .get(i / 32)
                .is_some_and(|w| (w >> (i % 32)) & 1 == 1)
        };
        let data = logits
            .iter()
            .enumerate()
            .map(|(i, &l)| {
                let l = if bit(i) { l } else { f32::NEG_INFINITY };
                LlamaTokenData::new(LlamaToken(i as i32), l, 0.0)
            })
            .collect();
        let mut cur = LlamaTokenDataArray::new(data, false);
        chain.apply(&mut cur);
        cur.selected
            .and_then(|i| cur.data.get(i))
            .filter(|d| d.logit() != f32::NEG_INFINITY)
            .map(|d| d.id())
    }

    /// Issue 20: under a grammar, the greedy choice among the tokens its mask allows must be the
    /// chain's over the masked array, for masks that allow everything, nothing, scattered tokens,
    /// whole runs of words, and that end before the vocabulary does.
    #[test]
    fn the_masked_greedy_path_picks_what_the_llama_cpp_chain_picks() {
        let mut rng = Lcg(11);
        for (case, &(n_vocab, repeat, last_n, mask)) in [
            (37, 1.0, 64, false),
            (40, 1.15, 8, true),
            (300, 1.3, 3, true),
            (1000, 1.15, 64, true),
            (5003, 1.15, 256, false),
        ]
        .iter()
        .enumerate()
        {
            let (mut llama, mut fast) = pair(n_vocab, repeat, last_n, mask);
            let words = (n_vocab as usize).div_ceil(32);
            for step in 0..300 {
                let logits = rng.row(n_vocab, step);
                let allowed: Vec<u32> = match step % 7 {
                    0 => vec![u32::MAX; words],
                    1 => vec![0; words],
                    2 => (0..words).map(|_| rng.next() & rng.next()).collect(),
                    3 => (0..words).map(|_| 1 << (rng.next() % 32)).collect(),
                    4 => (0..words)
                        .map(|_| {
                            if rng.next().is_multiple_of(3) {
                                0
                            } else {
                                u32::MAX
                            }
                        })
                        .collect(),
                    5 => vec![u32::MAX; words / 2],
                    _ => (0..words).map(|_| rng.next()).collect(),
                };
                let want = chain_pick_allowed(&mut llama, &logits, &allowed);
                let got = fast.pick_allowed(&logits, &allowed);
                assert_eq!(
                    got, want,
                    "case {case}, step {step}: {logits:?} {allowed:?}"
                );
                let accepted = match want {
                    Some(t) if step % 3 != 0 => t,
                    _ => LlamaToken((rng.next() % 6) as i32),
                };
                llama.accept(accepted);
                fast.accept(accepted);
            }
        }
    }

    #[test]
    fn the_first_of_equal_maxima_is_chosen_and_a_leading_nan_is_never_beaten() {
        let first_max = |v: &[f32]| first_max_changed(v, &[]);
        assert_eq!(first_max(&[1.0, 3.0, 3.0, 2.0]), 1);
        assert_eq!(first_max(&[f32::NAN, 3.0, 4.0]), 0);
        assert_eq!(first_max(&[1.0, f32::NAN, 0.5]), 0);
        assert_eq!(first_max(&[f32::NEG_INFINITY; 3]), 0);
        let mut long = vec![0.5f32; 100];
        long[70] = 2.0;
        long[90] = 2.0;
        assert_eq!(first_max(&long), 70);
        // Equal maxima in different lanes and in the tail past the last whole chunk.
        long[17] = 2.0;
        assert_eq!(first_max(&long), 17);
        long[99] = 3.0;
        assert_eq!(first_max(&long), 99);
        assert_eq!(first_max(&[]), 0);
    }

    /// Issue 20: the row is no longer copied to change the masked and penalized entries; their
    /// new values stand in for the row's at their indices, with the same tie and NaN rules.
    #[test]
    fn changed_entries_stand_in_for_the_rows_own() {
        let row = [1.0, 5.0, 2.0, 5.0, 4.0];
        // The maximum masked: the next one, first of equal ones.
        assert_eq!(first_max_changed(&row, &[(1, f32::NEG_INFINITY)]), 3);
        assert_eq!(first_max_changed(&row, &[(1, 4.0), (3, 4.0)]), 1);
        assert_eq!(
            first_max_changed(&row, &[(1, f32::NEG_INFINITY), (3, f32::NEG_INFINITY)]),
            4
        );
        // A changed entry raised above the rest, and one at index 0.
        assert_eq!(first_max_changed(&row, &[(2, 9.0)]), 2);
        assert_eq!(first_max_changed(&row, &[(0, f32::NAN)]), 0);
        assert_eq!(first_max_changed(&row, &[(0, 5.0)]), 0);
        // Every entry masked: index 0, as llama.cpp's scan leaves it.
        let all: Vec<(usize, f32)> = (0..row.len()).map(|i| (i, f32::NEG_INFINITY)).collect();
        assert_eq!(first_max_changed(&row, &all), 0);
    }
}
