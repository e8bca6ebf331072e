//! Where a prompt's evaluation starts when most of it is already in the KV cache.
//!
//! ggml's CPU flash attention runs a tiled kernel (query rows times cached keys as small matrix
//! products) once a batch holds at least [`TILE_ROWS`] query rows, and a row-at-a-time vector
//! kernel below that. Deep in a long history the vector kernel dominates: on the 2-core machine
//! SmolLM2 evaluated 63 new tokens behind 2,600 cached ones in 1,290 ms and 66 tokens in 750 ms
//! (`burrow bench --tests depth`). An agent step adds 40-150 tokens to a history of 1-3k, right
//! where that cliff is. So a short batch deep in the cache is padded to a full tile by
//! evaluating again the last few cached tokens, when the cost model says the tiled kernel wins.
//! The re-evaluated tokens produce the same KV entries they had.

/// Query rows from which ggml-cpu takes the tiled path (`GGML_FA_TILE_Q` in the vendored
/// llama.cpp, `ggml/src/ggml-cpu/common.h`).
pub(super) const TILE_ROWS: usize = 64;

/// Attention work per FLOP relative to the weights' matrix products, measured with SmolLM2
/// Q4_1 on 2 x86-64-v3 cores (`burrow bench --tests depth`, 47 new tokens at depths 0 to 2600,
/// padded and not): per token, 5.7 ms for the weights (2 x 135M FLOPs), 5.8 ms per thousand
/// cached keys with the vector kernel and 2.9 ms with the tiled one (69k FLOPs per key).
const VECTOR_SLOWDOWN: f64 = 4.0;
const TILED_SLOWDOWN: f64 = 2.0;

/// What one token costs to evaluate, in FLOPs, for the model at hand.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct PrefillCost {
    /// The weights' matrix products: two FLOPs per parameter.
    pub per_token: f64,
    /// Attention against one cached key: Q·K and the weighted V sum over every layer's heads.
    pub per_key: f64,
}

impl PrefillCost {
    /// `None` where padding cannot pay: a model offloaded to a GPU (other kernels, other
    /// thresholds), or one whose shape llama.cpp did not report.
    pub(super) fn for_model(
        params: u64,
        layers: u32,
        embedding: i32,
        gpu_layers: u32,
    ) -> Option<Self> {
        if gpu_layers > 0 || params == 0 || layers == 0 || embedding <= 0 {
            return None;
        }
        Some(PrefillCost {
            per_token: 2.0 * params as f64,
            per_key: 4.0 * f64::from(layers) * f64::from(embedding),
        })
    }

    /// Estimated cost of evaluating `rows` query tokens behind `depth` cached ones.
    fn batch(&self, rows: usize, depth: usize, slowdown: f64) -> f64 {
        rows as f64 * (self.per_token + slowdown * depth as f64 * self.per_key)
    }

    /// The first prompt position to evaluate, given that the first `common` tokens of a
    /// `len`-token prompt are cached (`common < len`). Either `common`, or less when
    /// re-evaluating `common - start` cached tokens lets the batch take the tiled kernel and
    /// that is estimated to be faster.
    pub(super) fn start(&self, common: usize, len: usize) -> usize {
        let new = len.saturating_sub(common);
        if new == 0 || new >= TILE_ROWS || common + new < TILE_ROWS {
            return common;
        }
        let padded = common - (TILE_ROWS - new);
        let vector = self.batch(new, common, VECTOR_SLOWDOWN);
        let tiled = self.batch(TILE_ROWS, padded, TILED_SLOWDOWN);
        if tiled < vector {
            padded
        } else {
            common
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn smollm2() -> PrefillCost {
        PrefillCost::for_model(134_515_008, 30, 576, 0).unwrap()
    }

    #[test]
    fn a_full_tile_or_more_is_never_padded() {
        let c = smollm2();
        assert_eq!(c.start(2600, 2600 + 64), 2600);
        assert_eq!(c.start(2600, 2600 + 500), 2600);
    }

    #[test]
    fn a_short_batch_deep_in_the_cache_is_padded_to_one_tile() {
        let c = smollm2();
        // The measured case: 47-63 new tokens behind 1,600-2,600 cached ones.
        for (common, new) in [(1600, 47), (2600, 47), (2600, 63), (1600, 56)] {
            let start = c.start(common, common + new);
            assert_eq!(
                common + new - start,
                TILE_ROWS,
                "{new} new at depth {common}"
            );
        }
    }

    #[test]
    fn padding_that_costs_more_than_it_saves_is_not_done() {
        let c = smollm2();
        // Few new tokens: re-evaluating 50 cached ones costs more than the slow kernel does.
        assert_eq!(c.start(2600, 2600 + 15), 2600);
        assert_eq!(c.start(2600, 2600 + 31), 2600);
        // Shallow: attention is cheap either way.
        assert_eq!(c.start(100, 100 + 40), 100);
    }

    #[test]
    fn padding_never_reaches_before_the_start_of_the_prompt() {
        let c = smollm2();
        assert_eq!(c.start(10, 60), 10);
        assert_eq!(c.start(0, 30), 0);
        assert_eq!(c.start(5, 5), 5);
    }

    #[test]
    fn a_bigger_model_pads_only_closer_to_a_full_tile() {
        // A 7B model's weights dominate its per-token cost far more than a 135M model's.
        let big = PrefillCost::for_model(7_000_000_000, 32, 4096, 0).unwrap();
        assert_eq!(big.start(2000, 2000 + 47), 2000);
        assert_eq!(big.start(2000, 2000 + 62), 2000 + 62 - TILE_ROWS);
    }

    #[test]
    fn gpu_offload_turns_padding_off() {
        assert_eq!(PrefillCost::for_model(134_515_008, 30, 576, 31), None);
        assert_eq!(PrefillCost::for_model(0, 30, 576, 0), None);
    }
}
