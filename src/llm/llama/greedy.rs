//! The greedy choice made straight from the logits, for a sampler chain of the form
//! [end of turn masked] [repetition penalty] greedy: the same token llama.cpp's chain selects.
//!
//! The chain works on an array of (id, logit, p) for the whole vocabulary: filling it and
//! scanning it took about 0.45 ms per token with Qwen2.5's 151,936 tokens on this 2-core machine.
//! That is 1% of a CPU decode step, but on a GPU (a token every 1.2 ms on an H200) it was most
//! of Burrow's gap to llama-bench's decode (0.76x). Here the logits are copied, the few tokens the
//! chain changes are changed with the same float operations, and the first maximum is found in
//! a pass the compiler vectorizes. Every other chain (temperature, top-k, a grammar's full pass)
//! still goes through llama.cpp's samplers.

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
    scratch: Vec<f32>,
    distinct: Vec<i32>,
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
            scratch: Vec::new(),
            distinct: Vec::new(),
        }
    }

    /// The token the chain would select from `logits` (indexed by token id).
    pub fn pick(&mut self, logits: &[f32]) -> LlamaToken {
        let changed = !self.masked.is_empty() || !self.window.is_empty();
        if !changed {
            return LlamaToken(first_max(logits) as i32);
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(logits);
        for t in &self.masked {
            if let Some(l) = usize::try_from(t.0)
                .ok()
                .and_then(|i| self.scratch.get_mut(i))
            {
                *l += f32::NEG_INFINITY;
            }
        }
        // Each distinct token once, as llama.cpp's count map visits it (sorted, since the
        // window can be set to thousands of tokens).
        self.distinct.clear();
        self.distinct.extend(self.window.iter().map(|t| t.0));
        self.distinct.sort_unstable();
        self.distinct.dedup();
        for &t in &self.distinct {
            if let Some(l) = usize::try_from(t)
                .ok()
                .and_then(|i| self.scratch.get_mut(i))
            {
                if *l <= 0.0 {
                    *l *= self.repeat;
                } else {
                    *l /= self.repeat;
                }
            }
        }
        LlamaToken(first_max(&self.scratch) as i32)
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

/// The index llama.cpp's greedy sampler selects: the first that is greater than every one before
/// it, scanning from index 0 (so a NaN is never chosen, except at index 0, which nothing beats).
fn first_max(v: &[f32]) -> usize {
    match v.first() {
        None => return 0,
        Some(x) if x.is_nan() => return 0,
        Some(_) => {}
    }
    const LANES: usize = 16;
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let chunks = v.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for (m, &x) in lanes.iter_mut().zip(c) {
            if x > *m {
                *m = x;
            }
        }
    }
    let mut max = f32::NEG_INFINITY;
    for &x in lanes.iter().chain(rest) {
        if x > max {
            max = x;
        }
    }
    v.iter().position(|&x| x == max).unwrap_or(0)
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
        ]
        .iter()
        .enumerate()
        {
            let masked: Vec<LlamaToken> = if mask {
                vec![LlamaToken(0), LlamaToken(5), LlamaToken(n_vocab - 1)]
            } else {
                Vec::new()
            };
            let mut llama = chain(n_vocab, &masked, repeat, last_n);
            let mut fast = Greedy::new(masked.clone(), repeat, last_n);
            for step in 0..200 {
                let mut logits: Vec<f32> = (0..n_vocab).map(|_| rng.logit()).collect();
                match step % 10 {
                    3 => logits[0] = f32::NAN,
                    4 => logits[(rng.next() % n_vocab as u32) as usize] = f32::NAN,
                    5 => logits.iter_mut().for_each(|l| *l = -1.0),
                    _ => {}
                }
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

    #[test]
    fn the_first_of_equal_maxima_is_chosen_and_a_leading_nan_is_never_beaten() {
        assert_eq!(first_max(&[1.0, 3.0, 3.0, 2.0]), 1);
        assert_eq!(first_max(&[f32::NAN, 3.0, 4.0]), 0);
        assert_eq!(first_max(&[1.0, f32::NAN, 0.5]), 0);
        assert_eq!(first_max(&[f32::NEG_INFINITY; 3]), 0);
        let mut long = vec![0.5f32; 100];
        long[70] = 2.0;
        long[90] = 2.0;
        assert_eq!(first_max(&long), 70);
        assert_eq!(first_max(&[]), 0);
    }
}
