//! What a request samples with: the sampler chain of its parameters, and its grammar as a
//! constraint (llama.cpp's GBNF sampler or llguidance).

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;

use super::LoadedModel;
use crate::llm::engine::{LlmError, SamplingParams};
use crate::llm::grammar::{guidance_factory, Grammar, GrammarError};
use crate::llm::llama::greedy::Greedy;
use crate::llm::llama::worker::Constraint;
use crate::llm::llama::GrammarBackend;
use crate::llm::llama_log;

impl LoadedModel {
    pub(super) fn build_chain(
        &self,
        model: &LlamaModel,
        params: &SamplingParams,
        ignore_eos: bool,
    ) -> LlamaSampler {
        let mut chain = Vec::new();
        if ignore_eos {
            let biases: Vec<LlamaLogitBias> = self
                .eog_tokens
                .iter()
                .map(|&t| LlamaLogitBias::new(t, f32::NEG_INFINITY))
                .collect();
            chain.push(LlamaSampler::logit_bias(model.n_vocab(), &biases));
        }
        if params.repeat_penalty != 1.0 {
            chain.push(LlamaSampler::penalties(
                model.n_vocab(),
                params.repeat_last_n,
                params.repeat_penalty,
                0.0,
                0.0,
            ));
        }
        if params.temperature <= 0.0 {
            chain.push(LlamaSampler::greedy());
        } else {
            if params.top_k > 0 {
                chain.push(LlamaSampler::top_k(params.top_k));
            }
            if params.top_p < 1.0 {
                chain.push(LlamaSampler::top_p(params.top_p, 1));
            }
            if params.min_p > 0.0 {
                chain.push(LlamaSampler::min_p(params.min_p, 1));
            }
            chain.push(LlamaSampler::temp(params.temperature));
            let seed = params.seed.unwrap_or_else(rand_seed);
            chain.push(LlamaSampler::dist(seed));
        }
        LlamaSampler::chain(chain, true)
    }

    /// The greedy choice of `build_chain`'s chain for the same request, made straight from the
    /// logits (see `greedy`): None where the chain samples.
    pub(super) fn greedy_rule(&self, params: &SamplingParams, ignore_eos: bool) -> Option<Greedy> {
        (params.temperature <= 0.0).then(|| {
            let masked = if ignore_eos {
                self.eog_tokens.clone()
            } else {
                Vec::new()
            };
            Greedy::new(masked, params.repeat_penalty, params.repeat_last_n)
        })
    }

    pub(super) fn build_constraint(
        &self,
        model: &LlamaModel,
        grammar: &Grammar,
    ) -> Result<Constraint, LlmError> {
        let use_gbnf = match grammar {
            Grammar::Gbnf(_) => true,
            Grammar::JsonSchema(_) => self.grammar_backend() == GrammarBackend::Gbnf,
            Grammar::Lark(_) => false,
        };
        if use_gbnf {
            let gbnf = grammar.to_gbnf()?;
            let mark = llama_log::mark();
            return LlamaSampler::grammar(model, &gbnf, "root")
                .map(Constraint::Gbnf)
                .map_err(|e| {
                    GrammarError::Rejected {
                        reason: llama_log::reason_since(mark, &e.to_string()),
                    }
                    .into()
                });
        }
        let factory = self
            .guidance
            .get_or_init(|| guidance_factory(&LlamaSampler::llguidance_tok_env(model)))
            .as_ref()
            .map_err(|e| GrammarError::Constraint {
                reason: format!("cannot prepare llguidance for this vocabulary: {e}"),
            })?;
        Ok(Constraint::Guidance(Box::new(grammar.compile(factory)?)))
    }
}

fn rand_seed() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish() as u32
}
