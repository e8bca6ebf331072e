//! `burrow embed`: texts to vectors with the embedding model, to inspect it and to compare
//! texts by meaning; `burrow models convert`: a sentence-transformers folder to GGUF.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;

use burrow::config::BurrowHome;
use burrow::llm::convert::{self, Precision};
use burrow::llm::embed::EmbeddingModel;

#[derive(Args)]
pub struct EmbedArgs {
    /// The texts to embed.
    #[arg(required = true)]
    pub texts: Vec<String>,
    /// Embedding model: a GGUF path or a catalogue id (default: the catalogue's embedding
    /// model). Also `--embedding-model`, as `ask`, `search` and `eval` call it.
    #[arg(long, short, visible_alias = "embedding-model")]
    pub model: Option<String>,
    /// CPU threads.
    #[arg(long)]
    pub threads: Option<u32>,
    /// Print the cosine similarity of every pair instead of the vectors.
    #[arg(long)]
    pub similarity: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn embed(home: &BurrowHome, args: EmbedArgs) -> Result<ExitCode> {
    let path = burrow::app::models::embedding_model(home, args.model.as_deref())?;
    let threads = args.threads.unwrap_or_else(default_threads);
    let model = EmbeddingModel::load(&path, threads)?;
    let texts: Vec<&str> = args.texts.iter().map(String::as_str).collect();
    let started = Instant::now();
    let vectors = model.embed(&texts)?;
    let seconds = started.elapsed().as_secs_f64();
    let tokens: usize = texts.iter().map(|t| model.tokens(t).len()).sum();
    // Every pair, only when asked for: 3,000 texts took 54 s for 7 s of embedding.
    let similarity: Vec<Vec<f32>> = if args.similarity {
        vectors
            .iter()
            .map(|a| vectors.iter().map(|b| dot(a, b)).collect())
            .collect()
    } else {
        Vec::new()
    };
    if args.json {
        let out = serde_json::json!({
            "model": path,
            "dimension": model.dimension(),
            "tokens": tokens,
            "seconds": seconds,
            "vectors": if args.similarity { None } else { Some(&vectors) },
            "similarity": if args.similarity { Some(&similarity) } else { None },
        });
        println!("{}", serde_json::to_string(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    if args.similarity {
        for (i, row) in similarity.iter().enumerate() {
            let cells: Vec<String> = row.iter().map(|c| format!("{c:6.3}")).collect();
            println!("{} {}", cells.join(" "), texts[i]);
        }
    } else {
        for (text, v) in texts.iter().zip(&vectors) {
            let head: Vec<String> = v.iter().take(8).map(|x| format!("{x:.4}")).collect();
            println!("[{}, …] {text}", head.join(", "));
        }
    }
    eprintln!(
        "{} texts, {tokens} tokens, {} dimensions in {:.0} ms ({:.0} tokens/s) with {}",
        texts.len(),
        model.dimension(),
        seconds * 1000.0,
        tokens as f64 / seconds.max(1e-9),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

pub(super) fn default_threads() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

/// `burrow models convert`.
pub fn convert(
    dir: PathBuf,
    out: PathBuf,
    name: Option<String>,
    outtype: &str,
) -> Result<ExitCode> {
    let name = name.unwrap_or_else(|| {
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "embedding model".into())
    });
    let precision = Precision::from_label(outtype)
        .with_context(|| format!("--outtype {outtype:?}: choose f32, f16 or q8_0"))?;
    // Checked before the conversion's minute of work, which then failed to rename its file
    // there and left it behind.
    if out.is_dir() {
        anyhow::bail!(
            "--out {}: is a folder; give the file to write, e.g. {}",
            out.display(),
            out.join(format!("{name}.gguf")).display()
        );
    }
    let part = out.with_extension("gguf.part");
    let file = File::create(&part).with_context(|| format!("creating {}", part.display()))?;
    let mut writer = BufWriter::new(file);
    let converted = convert::convert_bert(&dir, &name, precision, &mut writer)
        .map_err(anyhow::Error::from)
        .and_then(|()| writer.flush().map_err(anyhow::Error::from));
    if let Err(e) = converted {
        let _ = std::fs::remove_file(&part);
        return Err(e);
    }
    drop(writer);
    if let Err(e) = std::fs::rename(&part, &out) {
        let _ = std::fs::remove_file(&part);
        return Err(anyhow::Error::from(e).context(format!("renaming to {}", out.display())));
    }
    println!("{}", out.display());
    Ok(ExitCode::SUCCESS)
}
