//! Tests of the reader against files the writer builds.

use super::*;

fn tiny() -> GgufWriter {
    GgufWriter::new()
        .meta_str("general.architecture", "llama")
        .meta_str("general.name", "Tiny")
        .meta_u32("llama.context_length", 2048)
        .meta_array(
            "tokenizer.ggml.tokens",
            ValueType::String,
            (0..100)
                .map(|i| MetaValue::String(format!("t{i}")))
                .collect(),
        )
        .tensor("token_embd.weight", &[64, 100], 3)
        .tensor("output_norm.weight", &[64], 0)
}

fn write(dir: &Path, name: &str, w: &GgufWriter) -> PathBuf {
    let p = dir.join(name);
    w.write_to(&p, false).unwrap();
    p
}

#[test]
fn reads_what_the_writer_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "tiny.gguf", &tiny());
    let h = GgufHeader::read(&p).unwrap();
    assert_eq!(h.version, 3);
    assert_eq!(h.architecture(), Some("llama"));
    assert_eq!(h.arch_u64("context_length"), Some(2048));
    assert_eq!(h.n_parameters(), 64 * 100 + 64);
    assert_eq!(h.tensors[0].type_name(), "Q4_1");
    assert_eq!(h.tensors[0].size_bytes, 64 * 100 / 32 * 20);
    match h.get("tokenizer.ggml.tokens") {
        Some(MetaValue::Array(a)) => {
            assert_eq!(a.len, 100);
            assert!(a.values.is_none(), "long arrays keep only their length");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn every_truncation_is_rejected_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "tiny.gguf", &tiny());
    let bytes = std::fs::read(&p).unwrap();
    for cut in 0..bytes.len() {
        let short = dir.path().join("short.gguf");
        std::fs::write(&short, &bytes[..cut]).unwrap();
        let err = GgufHeader::read(&short).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("short.gguf"), "error names the file: {msg}");
        assert!(
            matches!(
                err,
                GgufError::Truncated { .. } | GgufError::BadMagic { .. }
            ),
            "cut at {cut}: {msg}"
        );
    }
}

#[test]
fn random_bytes_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("noise.gguf");
    // A fixed pseudo-random stream: deterministic, and not a GGUF.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let noise: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&p, &noise).unwrap();
    assert!(matches!(
        GgufHeader::read(&p),
        Err(GgufError::BadMagic { .. })
    ));
    // Random bytes behind a valid magic and version exercise the length checks.
    let mut forged = b"GGUF".to_vec();
    forged.extend_from_slice(&3u32.to_le_bytes());
    forged.extend_from_slice(&noise);
    std::fs::write(&p, &forged).unwrap();
    let err = GgufHeader::read(&p).unwrap_err();
    assert!(
        matches!(err, GgufError::Corrupt { .. } | GgufError::Truncated { .. }),
        "{err}"
    );
}

#[test]
fn flipped_bytes_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "tiny.gguf", &tiny());
    let bytes = std::fs::read(&p).unwrap();
    let header_len = GgufHeader::read(&p).unwrap().header_bytes_read as usize;
    let q = dir.path().join("flipped.gguf");
    for i in 0..header_len {
        for v in [0x00u8, 0xff, 0x80] {
            let mut b = bytes.clone();
            b[i] = v;
            std::fs::write(&q, &b).unwrap();
            // Either it still parses (the byte did not matter) or it is a typed error.
            let _ = GgufHeader::read(&q);
        }
    }
}

#[test]
fn a_header_claiming_huge_counts_is_corrupt_not_an_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("forged.gguf");
    let mut b = b"GGUF".to_vec();
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&u64::MAX.to_le_bytes());
    b.extend_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(&p, &b).unwrap();
    let err = GgufHeader::read(&p).unwrap_err();
    assert!(matches!(err, GgufError::Truncated { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("metadata count of 18446744073709551615"),
        "{err}"
    );
}

#[test]
fn bad_version_and_directory_and_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v1.gguf");
    let mut b = b"GGUF".to_vec();
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&[0u8; 16]);
    std::fs::write(&p, &b).unwrap();
    let err = GgufHeader::read(&p).unwrap_err();
    assert!(
        matches!(err, GgufError::UnsupportedVersion { version: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("convert the model again"), "{err}");
    assert!(matches!(
        GgufHeader::read(dir.path()),
        Err(GgufError::IsDirectory { .. })
    ));
    let missing = dir.path().join("nope.gguf");
    let err = GgufHeader::read(&missing).unwrap_err();
    assert!(err.to_string().contains("nope.gguf"));
}

/// What a version field outside 2..=3 says: a text file that starts with "GGUF" (the e2e's
/// broken.gguf was reported as "GGUF version 1953459744 is not supported"), a big-endian file,
/// a newer format.
#[test]
fn a_version_field_is_read_for_what_it_means() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, Vec<u8>, &str); 3] = [
        (
            "text.gguf",
            b"GGUF not really a model".to_vec(),
            "not a GGUF file: it starts with \"GGUF\" but its version field reads 1953459744",
        ),
        (
            "big-endian.gguf",
            [b"GGUF".as_slice(), &3u32.to_be_bytes(), &[0u8; 16]].concat(),
            "a big-endian GGUF file (version 3)",
        ),
        (
            "future.gguf",
            [b"GGUF".as_slice(), &4u32.to_le_bytes(), &[0u8; 16]].concat(),
            "GGUF version 4 is newer than this build reads",
        ),
    ];
    for (name, bytes, says) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let err = GgufHeader::read(&p).unwrap_err();
        assert!(matches!(err, GgufError::UnsupportedVersion { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(says) && msg.contains(name), "{name}: {msg}");
    }
}

#[test]
fn rewrite_keeps_everything_but_the_edits() {
    let dir = tempfile::tempdir().unwrap();
    let src = write(dir.path(), "src.gguf", &tiny());
    let dst = dir.path().join("dst.gguf");
    rewrite_metadata(
        &src,
        &dst,
        &[
            MetaEdit::Set(
                "general.architecture".into(),
                MetaValue::String("frobnicator".into()),
            ),
            MetaEdit::Remove("general.name".into()),
            MetaEdit::Set("x.new".into(), MetaValue::U32(7)),
        ],
    )
    .unwrap();
    let a = GgufHeader::read(&src).unwrap();
    let b = GgufHeader::read(&dst).unwrap();
    assert_eq!(b.architecture(), Some("frobnicator"));
    assert_eq!(b.get("general.name"), None);
    assert_eq!(b.get_u64("x.new"), Some(7));
    assert_eq!(
        b.get("tokenizer.ggml.tokens"),
        a.get("tokenizer.ggml.tokens")
    );
    assert_eq!(a.tensors, b.tensors);
    let data =
        |p: &Path, h: &GgufHeader| std::fs::read(p).unwrap()[h.data_offset as usize..].to_vec();
    assert_eq!(data(&src, &a), data(&dst, &b));
}

#[test]
fn tensor_directory_is_validated() {
    let dir = tempfile::tempdir().unwrap();
    // A Q4_1 tensor whose row is not a whole number of blocks.
    let w = GgufWriter::new().tensor("bad", &[33, 2], 3);
    let p = write(dir.path(), "rows.gguf", &w);
    let err = GgufHeader::read(&p).unwrap_err().to_string();
    assert!(err.contains("not a multiple"), "{err}");
    // An unknown tensor type.
    let w = GgufWriter::new().tensor("odd", &[32], 99);
    let p = write(dir.path(), "type.gguf", &w);
    let err = GgufHeader::read(&p).unwrap_err().to_string();
    assert!(err.contains("unknown ggml type 99"), "{err}");
    // Duplicate keys.
    let w = GgufWriter::new().meta_u32("a", 1).meta_u32("a", 2);
    let p = write(dir.path(), "dup.gguf", &w);
    let err = GgufHeader::read(&p).unwrap_err().to_string();
    assert!(err.contains("duplicate metadata key"), "{err}");
}

#[test]
fn a_huge_sparse_model_reads_only_its_header() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.gguf");
    // 5 GiB of F16 weights, as a hole in a sparse file.
    let w = tiny().tensor("blk.0.ffn.weight", &[65536, 40960], 1);
    w.write_to(&p, true).unwrap();
    let h = GgufHeader::read(&p).unwrap();
    assert!(h.file_size > 5 << 30);
    assert!(
        h.header_bytes_read < 4096,
        "read {} bytes",
        h.header_bytes_read
    );
}
