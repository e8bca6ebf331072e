use super::scan::{dot, nearest_in, Ask, VectorIndex};
use crate::workspace::search::Kind;
use crate::workspace::text::Role;

/// The stamp that tells a search its vectors changed must move when a unit's vector goes
/// with the unit (a foreign-key cascade, as when re-indexing removes a file), not only
/// when a pass writes vectors.
#[test]
fn the_vectors_stamp_moves_when_a_unit_and_its_vector_are_deleted() {
    let conn = crate::workspace::db::open_in_memory().unwrap();
    conn.execute_batch(
        "INSERT INTO repos (id, name, added_at) VALUES (1, 'r', 0);
             INSERT INTO docs (id, repo_id, kind, source, source_id, title, body, terms)
             VALUES (1, 1, 'issue', 'issue', 1, 't', 'b', ''),
                    (2, 1, 'issue', 'issue', 2, 't', 'b', '');
             INSERT INTO embedding_model (id, name, dimension) VALUES (1, 'm', 2);
             INSERT INTO vectors (hash, vec) VALUES (x'01', zeroblob(8));
             INSERT INTO doc_vectors (doc_id, hash) VALUES (1, x'01'), (2, x'01');",
    )
    .unwrap();
    let before = VectorIndex::read_stamp(&conn).unwrap();
    assert!(before.1);
    conn.execute("DELETE FROM docs WHERE id = 2", []).unwrap();
    let after = VectorIndex::read_stamp(&conn).unwrap();
    assert_ne!(before, after);
    conn.execute("DELETE FROM repos", []).unwrap();
    let none = VectorIndex::read_stamp(&conn).unwrap();
    assert!(none.0 > after.0 && !none.1);
}

/// The rankings a leaning question asks for (every kind, its kind, issues, its kind's
/// outlines) come from one pass over the vectors: each must be what a scan of its own
/// gives, kinds, outlines and repository kept to.
#[test]
fn rankings_from_one_scan_are_those_of_a_scan_each() {
    let dim = 8;
    let n = 60;
    let kinds = [Kind::Issue, Kind::Pr, Kind::Commit, Kind::Code];
    let mut index = VectorIndex {
        stamp: (0, true),
        model: "m".into(),
        fingerprint: None,
        dim,
        ids: (0..n).map(|i| 1000 + i as i64).collect(),
        kinds: (0..n).map(|i| kinds[i % 4]).collect(),
        repos: (0..n).map(|i| (i % 3) as i64).collect(),
        roles: (0..n)
            .map(|i| [Role::Part, Role::Outline, Role::Whole][i % 5 % 3])
            .collect(),
        data: Vec::new(),
    };
    for i in 0..n {
        let v: Vec<f32> = (0..dim).map(|d| ((i * 7 + d * 3) as f32).sin()).collect();
        let norm = dot(&v, &v).sqrt();
        index.data.extend(v.iter().map(|x| x / norm));
    }
    let query: Vec<f32> = (0..dim).map(|d| (d as f32 * 0.9).cos()).collect();
    let all: &[Kind] = &[];
    let prs: &[Kind] = &[Kind::Pr];
    let issues: &[Kind] = &[Kind::Issue, Kind::Commit];
    let code: &[Kind] = &[Kind::Code, Kind::Doc];
    let ask = |n, kinds, outlines| Ask { n, kinds, outlines };
    for repo in [None, Some(1)] {
        let asks = [
            ask(10, all, false),
            ask(5, prs, false),
            ask(40, issues, false),
            ask(4, code, true),
        ];
        let got = index.nearest_each(&query, &asks, repo).unwrap();
        assert_eq!(got.len(), 4);
        let kept = |a: &Ask, i: usize| {
            (a.kinds.is_empty() || a.kinds.contains(&index.kinds[i]))
                && match index.roles[i] {
                    Role::Part => !a.outlines,
                    Role::Outline => a.outlines,
                    Role::Whole => true,
                    Role::Changes => false,
                }
                && repo.is_none_or(|r| r == index.repos[i])
        };
        for (a, ranking) in asks.iter().zip(&got) {
            let alone: Vec<(i64, f32)> = nearest_in(&index.data, dim, &query, a.n, |i| kept(a, i))
                .into_iter()
                .map(|(i, s)| (index.ids[i], s))
                .collect();
            assert_eq!(ranking, &alone);
            assert!(!ranking.is_empty() && ranking.len() <= a.n);
            assert!(ranking.iter().all(|(id, _)| kept(a, (id - 1000) as usize)));
        }
    }
    assert!(index
        .nearest_each(&[1.0], &[ask(3, all, false)], None)
        .is_err());
}

#[test]
fn dot_in_lanes_is_the_plain_dot_product_for_any_length() {
    for n in [0, 1, 15, 16, 17, 384, 390] {
        let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
        let plain: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
        assert!((dot(&a, &b) as f64 - plain).abs() < 1e-4, "length {n}");
    }
}
