#!/usr/bin/env python3
"""Builds scripts/eval/tasks.jsonl. Every answer below was checked
by hand with git/jq/python (commands recorded in `why`); the asserts at the
bottom re-check the gui answers against the backup and the ripgrep answers
against git, so the file cannot drift from the data silently.

Usage: scripts/eval/make-tasks.py RIPGREP_CLONE (a clone with ripgrep's history; the
bitcoin-core/gui backup is read from ../shared beside this checkout)."""
import json, random, subprocess, glob, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
RG = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "../../../ripgrep")
H = "3fce3b5bb0236da2df6d99672afb8a719642eca7"
GUI = os.path.join(HERE, "../../../shared/fixtures/issues/bitcoin-core-gui-backup")

P = {  # people: login first, then known display names
    "maflcko": ["maflcko", "MarcoFalke", "Marco Falke"],
    "hebasto": ["hebasto", "Hennadii Stepanov"],
    "laanwj": ["laanwj", "Wladimir J. van der Laan"],
    "jonasschnelli": ["jonasschnelli", "Jonas Schnelli"],
    "luke-jr": ["luke-jr", "Luke Dashjr"],
    "Sjors": ["Sjors", "Sjors Provoost"],
    "furszy": ["furszy"],
    "Talkless": ["Talkless"],
    "promag": ["promag", "João Barbosa"],
    "pablomartin4btc": ["pablomartin4btc"],
    "ryanofsky": ["ryanofsky", "Russell Yanofsky"],
}
def ppl(*logins):
    out = []
    for l in logins:
        out += P.get(l, [l])
    return out

def gui(n): return f"bitcoin-core/gui#{n}"
def rg(path): return f"ripgrep:{path}"
def commit(h): return f"ripgrep@{h}"

T = []
def add(kind, task, parts, why):
    T.append({"kind": kind, "task": task, "parts": parts, "why": why})

# ---------------------------------------------------------------- fixed-by
# Candidates: merged PRs whose body has a closing keyword (fix/fixes/close/
# closes/resolve...) for an issue in the backup AND the issue's `closed`
# event commit_id equals the PR's merge commit (merge_commit_sha / `merged`
# event commit_id), with exactly one such PR per issue -> 56 issues; minus
# those whose issue or PR is already accepted by scripts/eval/questions*.jsonl
# -> 39. Ten drawn with random.Random(2027).sample(sorted(candidates), 10)
# -> [36, 544, 24, 1, 386, 431, 159, 756, 810, 732].
FX = "Evidence: pulls/{pr}.json .pull.body contains '{kw}'; issues/{iss}.json `closed` event commit_id {sha} == pulls/{pr}.json .pull.merge_commit_sha == `merged` event commit_id; merged_at {mat}, merged_by {mb}. Reviews: jq '.events[]|select(.event==\"reviewed\")|[.user.login,.state]' pulls/{pr}.json -> "
add("fixed-by",
    "Back in 2020 someone reported a pile of deprecation warnings when building the GUI against Qt 5.15. Which pull request cleaned those up, and name someone who reviewed it.",
    [{"what": "pr", "accept": [gui(46)]}, {"what": "person", "accept": ppl("promag", "maflcko")}],
    "Issue #36 (fanquake, 'Deprecation warnings when building against Qt 5.15'). " + FX.format(pr=46, kw="Fixes #36", iss=36, sha="0a267f4eb88597f9e3dbd4614c70427e6e41df20", mat="2020-11-19", mb="maflcko") + "promag COMMENTED, maflcko COMMENTED (no APPROVED review); review comments by maflcko. Author hebasto excluded.")
add("fixed-by",
    "Someone running several networks side by side asked for the Node window title to show which chain it is on, like the main window does. Which PR delivered that, and who merged it?",
    [{"what": "pr", "accept": [gui(758)]}, {"what": "person", "accept": ppl("hebasto")}],
    "Issue #544 (RandyMcMillan, 'Indicate network in the Node window title'; its body mentions PR #414, which is not the fix). " + FX.format(pr=758, kw="fixes #544", iss=544, sha="e3c17112ddfe740e5ab4c652d80ed1a19c13da5a", mat="2024-02-12", mb="hebasto") + "7 APPROVED reviewers (MarnixCroes, hernanmarino, BrandonOdiwuor, alfonsoromanz, kristapsk, hebasto, jess2505); the question asks for the merger.")
add("fixed-by",
    "There was a UX suggestion that the Receive tab should visually highlight its primary action button instead of all buttons looking the same. Which pull request implemented it, and who gave it an approving review?",
    [{"what": "pr", "accept": [gui(39)]}, {"what": "person", "accept": ppl("luke-jr")}],
    "Issue #24 (statusquont, 'Give primary action items more visual weight'). " + FX.format(pr=39, kw="Fix #24", iss=24, sha="ca30d34cf94b7797272ef1920ca4b48716e7f999", mat="2020-08-28", mb="maflcko") + "only luke-jr APPROVED.")
add("fixed-by",
    "Which merged pull request resolved gui issue #1 (the unused Decrypt mode of the passphrase dialog), and who merged it?",
    [{"what": "pr", "accept": [gui(109)]}, {"what": "person", "accept": ppl("maflcko")}],
    "Issue #1 (maflcko). Two PRs say they fix it: #42 (sehyunc, closed unmerged) and #109 (hebasto, merged). " + FX.format(pr=109, kw="Fix #1", iss=1, sha="54532f46c4e257cde682d492de72cde261998d3f", mat="2020-11-18", mb="maflcko") + "promag COMMENTED. Merger login .pull.merged_by.login = maflcko (the same account shows as 'MarcoFalke' in some older event actors).")
add("fixed-by",
    "A user wanted the send screen to remember that they ticked 'Subtract fee from amount' instead of resetting it every time. Which PR added that, and who approved it?",
    [{"what": "pr", "accept": [gui(390)]}, {"what": "person", "accept": ppl("hebasto")}],
    "Issue #386 (chessboards). " + FX.format(pr=390, kw="Close #386", iss=386, sha="9948f114f8e6fa7c998c4ede84719f5d1699e5e7", mat="2021-08-11", mb="hebasto") + "APPROVED only by hebasto (twice); shaavan, jarolrod, meshcollider only COMMENTED. Author psancheti110.")
add("fixed-by",
    "jarolrod noticed the separator before the third-party block-explorer links in the transaction table's context menu could go missing. Which pull request fixed it, and name one person other than the author who reviewed it.",
    [{"what": "pr", "accept": [gui(430)]}, {"what": "person", "accept": ppl("hebasto", "shaavan", "stratospher", "promag")}],
    "Issue #431 ('Separator can be omitted when adding third-party link actions to the transaction table'). " + FX.format(pr=430, kw="fixes #431", iss=431, sha="ba1a82e6083f99cb0ab17235926b762179b4df25", mat="2021-09-29", mb="hebasto") + "shaavan, stratospher, promag COMMENTED; hebasto COMMENTED then APPROVED. PR author jarolrod excluded. Note the PR (#430) has a lower number than the issue (#431).")
add("fixed-by",
    "MarcoFalke asked for the peer details panel to show the connection type instead of the old 'Direction' field. Which PR did it, and who approved it?",
    [{"what": "pr", "accept": [gui(163)]}, {"what": "person", "accept": ppl("hebasto")}],
    "Issue #159 (maflcko, 'Replace \"Direction\" with \"Connection Type\" in Peer Tab'). " + FX.format(pr=163, kw="Closes #159", iss=159, sha="094402430925ec5aac6edbbf52d74f10c665da43", mat="2021-01-10", mb="maflcko") + "hebasto CHANGES_REQUESTED once then APPROVED (6 times); maflcko, promag, jarolrod only COMMENTED. Author jonatack.")
add("fixed-by",
    "With several wallets loaded, the address book window didn't say which wallet's addresses it was showing. Which PR fixed that, and name someone who approved it.",
    [{"what": "pr", "accept": [gui(757)]}, {"what": "person", "accept": ppl("MarnixCroes", "hebasto")}],
    "Issue #756 (pablomartin4btc). " + FX.format(pr=757, kw="fixes bitcoin-core/gui#756", iss=756, sha="8369467c94bfddb1c93aa691a3392502fb19b033", mat="2023-10-04", mb="hebasto") + "APPROVED: MarnixCroes, hebasto; luke-jr CHANGES_REQUESTED (not an approval).")
add("fixed-by",
    "Bumping the fee on a pending transaction with 'create unsigned' still prompted for the wallet passphrase. Which pull request fixed it, and name one approver.",
    [{"what": "pr", "accept": [gui(812)]}, {"what": "person", "accept": ppl("MarnixCroes", "pablomartin4btc", "hebasto")}],
    "Issue #810 (kohend, 'Create unsigned when increasing fee asks for the passphrase'). " + FX.format(pr=812, kw="Fixes #810", iss=810, sha="b94061902e52132489fe296c12396798700f1f35", mat="2024-05-12", mb="hebasto") + "APPROVED: MarnixCroes, pablomartin4btc, hebasto. Author furszy.")
add("fixed-by",
    "When signing a loaded PSBT, the dialog gave no way to tell that one of the outputs was my own change. What PR fixed that and who merged it?",
    [{"what": "pr", "accept": [gui(740)]}, {"what": "person", "accept": ppl("hebasto")}],
    "Issue #732 (kallerosenbaum, 'Sign PSBT: Can't verify change output'). " + FX.format(pr=740, kw="fixes https://github.com/bitcoin-core/gui/issues/732", iss=732, sha="57b8336dfed6312003cf34cd5ae7099f77115e73", mat="2023-07-16", mb="hebasto") + "pablomartin4btc and jarolrod COMMENTED; author hernanmarino.")

# ---------------------------------------------------------------- filter
FW = " Computed over all issues/*.json or pulls/*.json (current labels, state, user.login, merged_at, merged_by): "
add("filter",
    "Which wallet-labelled issues opened by Sjors are still open? (2 expected)",
    [{"what": "issue", "accept": [gui(344)]}, {"what": "issue", "accept": [gui(657)]}],
    FW + "jq -r 'select(.issue.state==\"open\" and .issue.user.login==\"Sjors\" and (.issue.labels|map(.name)|index(\"Wallet\"))) | .issue.number' issues/*.json -> 344 (PSBT QR code display), 657 (PSBT dialog non-final signature). Cross-checked with python grouping by (state,label,author).")
add("filter",
    "List the bug reports filed by jarolrod that nobody has closed yet. (3 expected)",
    [{"what": "issue", "accept": [gui(131)]}, {"what": "issue", "accept": [gui(198)]}, {"what": "issue", "accept": [gui(241)]}],
    FW + "issues with label 'Bug', state open, user.login jarolrod -> 131 (Send/Transactions tab font inconsistencies on macOS), 198 (lack of input checks), 241 (independent geometry for Node and Main windows).")
add("filter",
    "What open feature requests did achow101 file against the GUI? (2 expected)",
    [{"what": "issue", "accept": [gui(19)]}, {"what": "issue", "accept": [gui(769)]}],
    FW + "label 'Feature', state open, author achow101 -> 19 (Import dialog), 769 (`used` balance on overview page).")
add("filter",
    "Which Design-labelled issues from Bosch-0 are still open? (3 expected)",
    [{"what": "issue", "accept": [gui(70)]}, {"what": "issue", "accept": [gui(77)]}, {"what": "issue", "accept": [gui(89)]}],
    FW + "label 'Design', state open, author Bosch-0 -> 70 (tray icons network status), 77 (new Create Wallet flow), 89 (Bitcoin Core logo discussion).")
add("filter",
    "Is there any pull request in the GUI repo that achow101 merged (rather than authored)? Which one?",
    [{"what": "pr", "accept": [gui(711)]}],
    FW + "pulls where .pull.merged_by.login=='achow101' -> only 711 (hebasto, 'refactor: Disable unused special members functions in UnlockContext', merged 2023-02-15). Also checked `merged` event actors: no other merged event by achow101.")
add("filter",
    "Which of furszy's pull requests were merged in October 2023? (3 expected)",
    [{"what": "pr", "accept": [gui(751)]}, {"what": "pr", "accept": [gui(764)]}, {"what": "pr", "accept": [gui(765)]}],
    FW + "author furszy and merged_at starting '2023-10' -> 751 (macOS, no actions during shutdown, 10-03), 764 (Remove legacy wallet creation, 10-07), 765 (wallet list hover crash on shutdown, 10-16). All PRs merged 2023-10: 742,751,754,757,764,765,766,767,770,771.")
add("filter",
    "Which issues labelled Bug were closed as 'not planned'? (2 expected)",
    [{"what": "issue", "accept": [gui(621)]}, {"what": "issue", "accept": [gui(622)]}],
    FW + "jq -r 'select(.issue.state_reason==\"not_planned\") | [.issue.number, (.issue.labels|map(.name)|join(\",\"))]' issues/*.json -> 10 not_planned issues; only 621 and 622 (both kjell-Ffw, 'i don't get a confirmation...') carry 'Bug'.")
add("filter",
    "Which open pull requests are currently marked as needing a rebase? (2 expected)",
    [{"what": "pr", "accept": [gui(870)]}, {"what": "pr", "accept": [gui(943)]}],
    FW + "state open and label 'Needs rebase' -> 870 (D33r-Gee, AssumeUTXO load snapshot, draft) and 943 (ShauryaaSharma, warn about rescan in wallet migration dialogs).")
add("filter",
    "Which pull requests carrying the Wallet label were merged in October 2023? (3 expected)",
    [{"what": "pr", "accept": [gui(757)]}, {"what": "pr", "accept": [gui(764)]}, {"what": "pr", "accept": [gui(766)]}],
    FW + "merged_at starting '2023-10' and label 'Wallet' -> 757 (pablomartin4btc, wallet name in address book title), 764 (furszy, remove legacy wallet creation), 766 (theStack, coin control input size for taproot).")
add("filter",
    "Which pull requests did laanwj merge in 2022? (2 expected)",
    [{"what": "pr", "accept": [gui(620)]}, {"what": "pr", "accept": [gui(623)]}],
    FW + "merged_by.login=='laanwj' and merged_at in 2022 -> 620 (w0xlt, Replace QRegExp with QRegularExpression), 623 (hebasto, Getting ready to Qt 6 (9/n)). Same result from `merged` event actors.")

# ---------------------------------------------------------------- count
add("count",
    "How many pull requests did hebasto open in the GUI repo during 2021 (any state)?",
    [{"what": "number", "accept": ["57"]}],
    "jq -r 'select(.pull.user.login==\"hebasto\" and (.pull.created_at|startswith(\"2021\"))) | .pull.number' pulls/*.json | wc -l -> 57; python over the same files -> 57. (Counts are over the backup as stored: 537 PRs + 341 issues; 81 numbers up to #959 are absent.)")
add("count",
    "How many issues (not PRs) opened in 2022 carry the Bug label?",
    [{"what": "number", "accept": ["25"]}],
    "jq over issues/*.json: label 'Bug' and created_at startswith 2022 -> 25 (541..689); python recount -> 25. Current labels only.")
add("count",
    "How many GUI pull requests did laanwj merge in 2021?",
    [{"what": "number", "accept": ["11"]}],
    "jq: .pull.merged_by.login=='laanwj' and merged_at in 2021 -> 79,180,220,260,271,281,313,336,351,381,406 = 11; the `merged` timeline events with actor laanwj in 2021 give the same 11.")
add("count",
    "How many issues in the GUI tracker were closed as 'not planned'?",
    [{"what": "number", "accept": ["10"]}],
    "jq -r 'select(.issue.state_reason==\"not_planned\")|.issue.number' issues/*.json -> 348,621,622,707,727,829,846,848,849,897 = 10; python Counter over state_reason -> not_planned: 10.")
add("count",
    "How many commits touched anything under crates/ignore between ripgrep 13.0.0 and 14.0.0?",
    [{"what": "number", "accept": ["76"]}],
    "git rev-list --count --no-merges 13.0.0..14.0.0 -- crates/ignore -> 76 (range has 0 merge commits, so with merges also 76); python over `git log --no-merges --name-only 13.0.0..14.0.0` counting commits with a path under crates/ignore/ -> 76.")
add("count",
    "How many commits does ripgrep 15.1.0 have on top of 15.0.0 (counting the release commit itself)?",
    [{"what": "number", "accept": ["19"]}],
    "git rev-list --count 15.0.0..15.1.0 -> 19 (no merges; includes the 15.1.0 release commit af60c2de, excludes 15.0.0); git log --oneline 15.0.0..15.1.0 | wc -l -> 19.")
add("count",
    "How many releases of the ignore crate (ignore-* tags) were tagged in 2026?",
    [{"what": "number", "accept": ["8"]}],
    "git tag -l 'ignore-*' --merged 3fce3b5b --format='%(refname:short) %(taggerdate:iso)' -> ignore-0.4.26 (2026-06-05) through ignore-0.4.33 (2026-08-04) = 8; for-each-ref creatordate and the tagged commits' committer dates agree (ignore-0.4.25 is 2025-10-30).")
add("count",
    "Of the commits that landed after 14.1.1, up to and including the 15.0.0 release commit, how many did Andrew Gallant author?",
    [{"what": "number", "accept": ["72"]}],
    "git shortlog -sne 14.1.1..15.0.0 -> 72 Andrew Gallant <jamslam@gmail.com> (only name/email variant for him in the range; range includes the 15.0.0 release commit, excludes 14.1.1); git log --format=%an 14.1.1..15.0.0 | grep -c '^Andrew Gallant$' -> 72 (of 136 total).")

# ---------------------------------------------------------------- last-change
LCW = " Checked that the newest commit is the same by author date and by committer date, with and without --no-merges/--first-parent."
add("last-change",
    "In ripgrep, what was the last commit to modify crates/core/flags/defs.rs before the 14.1.0 release, and who wrote it?",
    [{"what": "commit", "accept": [commit("e0a85678e112759f56f9e07d04a29f2eed6eb348")]}, {"what": "person", "accept": ["Jan Verbeek", "jan.verbeek"]}],
    "git log -1 --format='%H %an %ae' 14.1.0 -- crates/core/flags/defs.rs -> e0a85678 Jan Verbeek <jan.verbeek@posteo.nl> 'complete/fish: improve shell completions for fish' (authored 2023-12-11, committed 2024-01-06)." + LCW)
add("last-change",
    "Who last edited FAQ.md before ripgrep 15.0.0 was tagged, and in which commit?",
    [{"what": "commit", "accept": [commit("99fe884536e18bcd9f3c57ce598791d5baa975b1")]}, {"what": "person", "accept": ["emrebengue"]}],
    "git log -1 15.0.0 -- FAQ.md -> 99fe8845 emrebengue <emrebengue@gmail.com> 'colors: add `highlight` type support for matching lines' (authored 2025-07-23, committed 2025-09-19)." + LCW)
add("last-change",
    "What is the most recent commit touching the ignore crate's directory walker (crates/ignore/src/walk.rs) that made it into 14.0.0, and who authored it?",
    [{"what": "commit", "accept": [commit("6d7550d58e88583deeb142b56e0dbe52f5102cbf")]}, {"what": "person", "accept": ["Tavian Barnes", "tavianator"]}],
    "git log -1 14.0.0 -- crates/ignore/src/walk.rs -> 6d7550d5 Tavian Barnes <tavianator@tavianator.com> 'ignore: Avoid contention on num_pending' (authored 2023-10-30)." + LCW)
add("last-change",
    "Before 2023 began, which commit last changed crates/cli/src/decompress.rs, and who made it?",
    [{"what": "commit", "accept": [commit("0aa31676e331dd2f3660a454609113d374701a82")]}, {"what": "person", "accept": ["Kian-Meng Ang", "kianmeng.ang"]}],
    "git log -1 --before=2023-01-01T00:00:00Z 3fce3b5b -- crates/cli/src/decompress.rs -> 0aa31676 Kian-Meng Ang 'doc: fix typos' (author 2022-06-24 +0800, committer 2022-06-24); max author date among commits before 2023 is the same commit.")
add("last-change",
    "Which commit was the last one to touch crates/ignore/src/gitignore.rs before January 1st 2022, and who authored it?",
    [{"what": "commit", "accept": [commit("e824531e387b96b43fd2c2d396c884c010eb13d4")]}, {"what": "person", "accept": ["Andrew Gallant", "jamslam", "BurntSushi"]}],
    "git log -1 --before=2022-01-01T00:00:00Z 3fce3b5b -- crates/ignore/src/gitignore.rs -> e824531e Andrew Gallant 'edition: manual changes' (2021-06-01); max by author date gives the same commit.")
add("last-change",
    "Going by the state at the end of 2025, who last changed ripgrep's built-in file type list (crates/ignore/src/default_types.rs), and what was the commit?",
    [{"what": "commit", "accept": [commit("24e88dc15b58b6fcc16d217158994871e756a6ca")]}, {"what": "person", "accept": ["Jorge Gomez", "jgart"]}],
    "git log -1 --before=2026-01-01T00:00:00Z 3fce3b5b -- crates/ignore/src/default_types.rs -> 24e88dc1 Jorge Gomez <jgart@dismail.de> 'ignore/types: add `ssa` type' (2025-10-22); next change is 9b84e154 (2026-02-13). Same by author date.")
add("last-change",
    "What was the last commit to modify crates/core/flags/hiargs.rs before June 1, 2024, and who authored it?",
    [{"what": "commit", "accept": [commit("6ebebb2aaa9991694aed10b944cf2e8196811e1c")]}, {"what": "person", "accept": ["SuperSpecialSweet", "freejool", "39995589+freejool"]}],
    "git log -1 --before=2024-06-01T00:00:00Z 3fce3b5b -- crates/core/flags/hiargs.rs -> 6ebebb2a SuperSpecialSweet <39995589+freejool@users.noreply.github.com> 'doc: fix typo in comments' (2024-02-22); same by author date.")

# ---------------------------------------------------------------- first-release
FRW = " Earliest tag from `git for-each-ref --sort=creatordate --contains <c> refs/tags`, restricted to tags merged into 3fce3b5b and to the named tag family."
add("first-release",
    "Which ripgrep release was the first to ship the printer's hyperlink support (the change by Lucas Trzesniewski that added hyperlinks)?",
    [{"what": "tag", "accept": ["14.0.0"]}],
    "Commit 1a50324013708e3c73bfa986d273af2f8e8e3360 'printer: add hyperlinks' (authored 2023-07-08, committed 2023-09-25). --contains -> 14.0.0 (2023-11-26), 14.0.1, ...; 13.0.0 does not contain it." + FRW)
add("first-release",
    "The --include-zero flag was contributed by Collin Styles. What is the first ripgrep version that includes it?",
    [{"what": "tag", "accept": ["12.0.0"]}],
    "Commit a070722ff27c7d57d47b1766de9d253fbfe5bef9 'cli: add --include-zero flag' (authored 2019-10-16, committed 2020-02-17). --contains -> 12.0.0 (2020-03-15) first; 11.0.2 (2019-08) does not contain it." + FRW)
add("first-release",
    "In which ripgrep release did the --stop-on-nonmatch flag first appear?",
    [{"what": "tag", "accept": ["14.0.0"]}],
    "Commit 6d95c130d5fb56a8641092a4808f33640bfa935c 'cli: add --stop-on-nonmatch flag' by Edoardo Pirovano: authored 2021-07-07 but committed 2023-07-08, so it is NOT in 13.0.0 (2021-06-12). --contains -> 14.0.0 first." + FRW)
add("first-release",
    "What was the first ripgrep release with the option to fall back to PCRE2 only when a pattern needs it (--auto-hybrid-regex)?",
    [{"what": "tag", "accept": ["11.0.0"]}],
    "Commit 967e7ad0de3e657e8f81c1384a48ca1eea4edde7 'ripgrep: add --auto-hybrid-regex flag' (2019-04-14). --contains -> 11.0.0 (2019-04-15) first; 0.10.0 does not contain it." + FRW)
add("first-release",
    "A contributor made the ignore crate skip loading ignore files from directories that can never be reached. Which ignore crate release first shipped that?",
    [{"what": "tag", "accept": ["ignore-0.4.32"]}],
    "Commit 435f59fc4b43af3ab32f34d53fa34978f393fe52 'ignore: skip loading unreachable ignore files' by jif (committed 2026-07-29). --contains, ignore-* only -> ignore-0.4.32 (2026-08-03), ignore-0.4.33; git merge-base --is-ancestor shows it is not in ignore-0.4.31 (2026-07-20). No ripgrep X.Y.Z release contains it." + FRW)
add("first-release",
    "Which ripgrep release first knew about the `ssa` file type?",
    [{"what": "tag", "accept": ["15.1.0"]}],
    "Commit 24e88dc15b58b6fcc16d217158994871e756a6ca 'ignore/types: add `ssa` type' (committed 2025-10-22 08:18 -0400). --contains, version tags only -> 15.1.0 (tagged 2025-10-22 08:30) first; 15.0.0 does not contain it. (ignore crate: ignore-0.4.25.)" + FRW)
add("first-release",
    "There is now a single file type that matches both Dockerfile and Containerfile. Which ripgrep release (not a crate tag) first had it?",
    [{"what": "tag", "accept": ["15.2.0"]}],
    "Commit 9b84e154c8e404f4c40f6f4e4c674ea02e77324a 'ignore/types: add `container` type that covers both `Dockerfile` and `Containerfile`' by Pavel Knoblokh (committed 2026-02-12). Version tags containing it: 15.2.0 (2026-07-15) first; not in 15.1.0 (merge-base --is-ancestor). Crate tag ignore-0.4.26 came earlier but the question asks for a ripgrep release." + FRW)

# ---------------------------------------------------------------- definition
DW = " Users found with `git grep -lw <name> 3fce3b5b -- '*.rs'`, minus the defining file, each hit read to confirm it is a real use (import/call/type use)."
add("definition",
    "In ripgrep's ignore crate, which file defines the helper `is_hidden_path`, and which file calls it?",
    [{"what": "file", "accept": [rg("crates/ignore/src/pathutil.rs")]}, {"what": "file", "accept": [rg("crates/ignore/src/incremental.rs")]}],
    "Defined at crates/ignore/src/pathutil.rs:19 `pub(crate) fn is_hidden_path(dent: &Path) -> bool`. Only caller: crates/ignore/src/incremental.rs (import line 8, calls at 379 and 407)." + DW)
add("definition",
    "Where is the `LineBufferReader` type defined in the searcher crate, and give one file that uses it.",
    [{"what": "file", "accept": [rg("crates/searcher/src/line_buffer.rs")]}, {"what": "file", "accept": [rg("crates/searcher/src/searcher/glue.rs"), rg("crates/searcher/src/searcher/mod.rs")]}],
    "Defined crates/searcher/src/line_buffer.rs:208 `pub(crate) struct LineBufferReader`. Used in crates/searcher/src/searcher/glue.rs and crates/searcher/src/searcher/mod.rs." + DW)
add("definition",
    "Which file defines the builder for glob overrides (`OverrideBuilder`) in ripgrep, and which file outside that one uses it?",
    [{"what": "file", "accept": [rg("crates/ignore/src/overrides.rs")]}, {"what": "file", "accept": [rg("crates/core/flags/hiargs.rs"), rg("crates/ignore/src/incremental.rs")]}],
    "Defined crates/ignore/src/overrides.rs:115 `pub struct OverrideBuilder`. Users: crates/core/flags/hiargs.rs (lines 1253, 1277 ignore::overrides::OverrideBuilder::new) and crates/ignore/src/incremental.rs (tests, 567/703/722)." + DW)
add("definition",
    "Where is `is_readable_stdin` implemented, and where does ripgrep call it to decide whether to search stdin?",
    [{"what": "file", "accept": [rg("crates/cli/src/lib.rs")]}, {"what": "file", "accept": [rg("crates/core/flags/hiargs.rs")]}],
    "Defined crates/cli/src/lib.rs:170 `pub fn is_readable_stdin() -> bool`. Only caller: crates/core/flags/hiargs.rs:1149 `grep::cli::is_readable_stdin()`." + DW)
add("definition",
    "Find the definition of `GitignoreBuilder` and name a file that constructs or uses one.",
    [{"what": "file", "accept": [rg("crates/ignore/src/gitignore.rs")]}, {"what": "file", "accept": [rg("crates/ignore/src/dir.rs"), rg("crates/ignore/src/overrides.rs"), rg("crates/ignore/src/walk.rs"), rg("crates/ignore/tests/gitignore_matched_path_or_any_parents_tests.rs"), rg("crates/ignore/tests/gitignore_skip_bom.rs")]}],
    "Defined crates/ignore/src/gitignore.rs:320 `pub struct GitignoreBuilder`. Users: crates/ignore/src/dir.rs, overrides.rs, walk.rs, tests/gitignore_matched_path_or_any_parents_tests.rs, tests/gitignore_skip_bom.rs." + DW)
add("definition",
    "Which file in grep-cli defines `escape_os`, and which other file in that crate uses it?",
    [{"what": "file", "accept": [rg("crates/cli/src/escape.rs")]}, {"what": "file", "accept": [rg("crates/cli/src/pattern.rs"), rg("crates/cli/src/lib.rs")]}],
    "Defined crates/cli/src/escape.rs:33 `pub fn escape_os(string: &OsStr) -> String`. Used by crates/cli/src/pattern.rs:57 (InvalidPatternError) and re-exported in crates/cli/src/lib.rs:139." + DW)

# ---------------------------------------------------------------- default
add("default",
    "If I use -C without --context-separator, what separator does ripgrep print between non-adjacent context chunks, and where is that default defined?",
    [{"what": "value", "accept": ["--", "\"--\""]}, {"what": "file", "accept": [rg("crates/core/flags/lowargs.rs")]}],
    "crates/core/flags/lowargs.rs:486-489 `impl Default for ContextSeparator { ContextSeparator(Some(BString::from(\"--\"))) }`; the flag doc in defs.rs:1241 also says the default is --.")
add("default",
    "What is ripgrep's default compiled-regex size limit (what --regex-size-limit overrides), and in which file is it set?",
    [{"what": "value", "accept": ["100 MiB", "100 MB", "100M", "104857600", "100 * (1 << 20)", "100 * 2^20 bytes"]}, {"what": "file", "accept": [rg("crates/regex/src/config.rs")]}],
    "crates/regex/src/config.rs:58 `size_limit: 100 * (1 << 20)` in `impl Default for Config`; ripgrep only overrides it when --regex-size-limit is given (crates/core/flags/hiargs.rs:509 `if let Some(limit) = self.regex_size_limit`).")
add("default",
    "How big is the DFA cache limit by default when --dfa-size-limit isn't passed, and where does that number come from?",
    [{"what": "value", "accept": ["1000 MiB", "1000 MB", "1000M", "1048576000", "1000 * (1 << 20)", "about 1 GB"]}, {"what": "file", "accept": [rg("crates/regex/src/config.rs")]}],
    "crates/regex/src/config.rs:59 `dfa_size_limit: 1000 * (1 << 20)`; it feeds hybrid_cache_capacity (line 255). hiargs.rs:512 only overrides when the flag is set.")
add("default",
    "When I don't pass -j/--threads, how many threads does current ripgrep pick, and which file decides?",
    [{"what": "value", "accept": ["number of available CPUs capped at 12", "min(available_parallelism, 12)", "available_parallelism().min(12)", "up to 12 (available parallelism, max 12); 1 when sorting or searching a single file", "12"]}, {"what": "file", "accept": [rg("crates/core/flags/hiargs.rs")]}],
    "crates/core/flags/hiargs.rs:178-184: threads = 1 if --sort/--sortr or a single file, else low.threads if given, else `std::thread::available_parallelism().map_or(1, |n| n.get()).min(12)`. defs.rs --threads doc: 0 (default) = heuristics.")
add("default",
    "Back in ripgrep 13.0.0, how was the default thread count computed, and in which source file?",
    [{"what": "value", "accept": ["min(12, num_cpus::get())", "number of CPUs capped at 12", "cmp::min(12, num_cpus::get())", "12"]}, {"what": "file", "accept": [rg("crates/core/args.rs")]}],
    "git grep -n num_cpus 13.0.0 -- crates/core -> crates/core/args.rs:1595 `Ok(if threads == 0 { cmp::min(12, num_cpus::get()) } else { threads })` (crates/core/flags/ did not exist yet in 13.0.0).")
add("default",
    "What is the default capacity of the searcher's line buffer in ripgrep, and which file defines it?",
    [{"what": "value", "accept": ["64 KiB", "64 KB", "65536", "64 * (1 << 10)", "65536 bytes"]}, {"what": "file", "accept": [rg("crates/searcher/src/line_buffer.rs")]}],
    "crates/searcher/src/line_buffer.rs:6 `pub(crate) const DEFAULT_BUFFER_CAPACITY: usize = 64 * (1 << 10); // 64 KB`, used by `impl Default for Config` (line 100 `capacity: DEFAULT_BUFFER_CAPACITY`).")

# ---------------------------------------------------------------- doc-check
add("doc-check",
    "The ripgrep FAQ shows the error 'Compiled regex exceeds size limit of 10485760 bytes', implying the regex size limit is 10 MB by default. Is 10 MB still the default in the code? Which file shows it?",
    [{"what": "verdict", "accept": ["no"]}, {"what": "file", "accept": [rg("crates/regex/src/config.rs")]}],
    "FAQ.md lines ~387-392 (section 'size-limit'). Code: crates/regex/src/config.rs:58 `size_limit: 100 * (1 << 20)` = 104857600 (100 MiB), with comment 'much bigger than what's in the regex crate by default'; ripgrep doesn't override unless --regex-size-limit is given (hiargs.rs:509).")
add("doc-check",
    "GUIDE.md says ripgrep never looks for a config file in a predetermined location and only reads one when RIPGREP_CONFIG_PATH is set. Does the code agree? Point to the file.",
    [{"what": "verdict", "accept": ["yes"]}, {"what": "file", "accept": [rg("crates/core/flags/config.rs")]}],
    "GUIDE.md 'Configuration file' section. crates/core/flags/config.rs `args()`: `std::env::var_os(\"RIPGREP_CONFIG_PATH\")`; None -> debug log 'not reading any config file' and return empty; empty value -> empty. No other path is consulted.")
add("doc-check",
    "The GUIDE claims -z/--search-zip handles gzip, bzip2, lzma, xz, lz4, brotli and zstd files. Is that backed by the code, and which file lists the formats?",
    [{"what": "verdict", "accept": ["yes"]}, {"what": "file", "accept": [rg("crates/cli/src/decompress.rs")]}],
    "GUIDE.md ~line 1016. crates/cli/src/decompress.rs default matchers (lines 519-530): *.gz/*.tgz gzip, *.bz2/*.tbz2 bzip2, *.xz/*.txz xz, *.lz4, *.lzma, *.br brotli, *.zst/*.zstd zstd (plus *.Z uncompress, not mentioned in the guide) - all claimed formats present.")
add("doc-check",
    "According to the FAQ, asking ripgrep to sort its output (--sort path) disables all parallelism. Is that what the code does? Which file?",
    [{"what": "verdict", "accept": ["yes"]}, {"what": "file", "accept": [rg("crates/core/flags/hiargs.rs")]}],
    "FAQ.md 'order' section. crates/core/flags/hiargs.rs:178 `let threads = if low.sort.is_some() || paths.is_one_file { 1 } ...` and line 923 `assert_eq!(1, self.threads, \"sorting implies single threaded\")`.")
add("doc-check",
    "The README says ripgrep stays fast while supporting Unicode, 'which is always on'. Is that claim accurate according to the code? Name the file that settles it.",
    [{"what": "verdict", "accept": ["no"]}, {"what": "file", "accept": [rg("crates/core/flags/defs.rs"), rg("crates/core/flags/hiargs.rs"), rg("crates/regex/src/config.rs")]}],
    "README.md 'Why should I use ripgrep?' bullet. crates/core/flags/defs.rs defines the --no-unicode flag (doc: 'By default, ripgrep will enable Unicode mode in all of its regexes'), stored as low.no_unicode; crates/core/flags/hiargs.rs:476 `.unicode(!self.no_unicode)`; crates/regex/src/config.rs default `unicode: true`. So it is on by default but can be disabled.")
add("doc-check",
    "GUIDE.md says .rgignore rules take precedence over .ignore, which take precedence over .gitignore. Is that how the ignore matcher is ordered? Which file shows it?",
    [{"what": "verdict", "accept": ["yes"]}, {"what": "file", "accept": [rg("crates/ignore/src/dir.rs")]}],
    "GUIDE.md lines 184-189 and 240-241. crates/ignore/src/dir.rs matched_ignore(): result is `m_custom_ignore.or(m_ignore).or(m_gi).or(m_gi_exclude).or(m_global).or(m_explicit)`; ripgrep registers .rgignore as the custom ignore filename in crates/core/flags/hiargs.rs:916.")
add("doc-check",
    "The GUIDE says -w/--word-regexp wraps the pattern in half word boundaries, \\b{start-half}(?:pattern)\\b{end-half}, rather than plain \\b. Does the regex code do that? Which file?",
    [{"what": "verdict", "accept": ["yes"]}, {"what": "file", "accept": [rg("crates/regex/src/config.rs")]}],
    "GUIDE.md ~line 1006-1011. crates/regex/src/config.rs:319-327 builds hir::Look::WordStartHalfUnicode/Ascii and WordEndHalfUnicode/Ascii around the pattern when word mode is on.")
add("doc-check",
    "PR #568's description says it fixes gui issue #567 (bitcoin-qt failing to start with incoming connections disabled). Going by the backup, is #567 closed now?",
    [{"what": "verdict", "accept": ["no"]}, {"what": "issue", "accept": [gui(567)]}],
    "pulls/568.json body 'Fixes: https://github.com/bitcoin-core/gui/issues/567', merged 2022-03-23 (merge f9ed0aec). issues/567.json events: closed by hebasto 2022-03-23 (commit 7f90dc26), then `reopened` by hebasto 2024-02-24; .issue.state == 'open', state_reason 'reopened'.")

# ---------------------------------------------------------------- checks
def gj(kind, n):
    return json.load(open(f"{GUI}/{kind}/{n}.json"))
def git(*a):
    return subprocess.check_output(["git", "-C", RG, *a], text=True).strip()

for t in T:
    for p in t["parts"]:
        for a in p["accept"]:
            if a.startswith("bitcoin-core/gui#"):
                n = int(a.split("#")[1])
                assert os.path.exists(f"{GUI}/issues/{n}.json") or os.path.exists(f"{GUI}/pulls/{n}.json"), a
            if a.startswith("ripgrep@"):
                h = a.split("@")[1]
                assert len(h) == 40
                subprocess.check_call(["git", "-C", RG, "merge-base", "--is-ancestor", h, H])
            if a.startswith("ripgrep:"):
                path = a.split(":", 1)[1]
                if "13.0.0" not in t["task"]:
                    git("cat-file", "-e", f"{H}:{path}")
                else:
                    git("cat-file", "-e", f"13.0.0:{path}")
            if p["what"] == "tag":
                assert a in git("tag", "--merged", H).split(), a

# fixed-by: PR merged, closes issue via merge commit
for iss, pr in [(36, 46), (544, 758), (24, 39), (1, 109), (386, 390), (431, 430), (159, 163), (756, 757), (810, 812), (732, 740)]:
    p = gj("pulls", pr)["pull"]; i = gj("issues", iss)
    assert p.get("merged_at"), pr
    assert str(iss) in p["body"], (iss, pr)
    mc = {p.get("merge_commit_sha")} | {e.get("commit_id") for e in gj("pulls", pr)["events"] if e["event"] == "merged"}
    assert any(e["event"] == "closed" and e.get("commit_id") in mc for e in i["events"]), (iss, pr)

# last-change
for rev, path, want in [("14.1.0", "crates/core/flags/defs.rs", "e0a85678e112759f56f9e07d04a29f2eed6eb348"),
                        ("15.0.0", "FAQ.md", "99fe884536e18bcd9f3c57ce598791d5baa975b1"),
                        ("14.0.0", "crates/ignore/src/walk.rs", "6d7550d58e88583deeb142b56e0dbe52f5102cbf")]:
    assert git("log", "-1", "--format=%H", rev, "--", path) == want
for date, path, want in [("2023-01-01", "crates/cli/src/decompress.rs", "0aa31676e331dd2f3660a454609113d374701a82"),
                         ("2022-01-01", "crates/ignore/src/gitignore.rs", "e824531e387b96b43fd2c2d396c884c010eb13d4"),
                         ("2026-01-01", "crates/ignore/src/default_types.rs", "24e88dc15b58b6fcc16d217158994871e756a6ca"),
                         ("2024-06-01", "crates/core/flags/hiargs.rs", "6ebebb2aaa9991694aed10b944cf2e8196811e1c")]:
    assert git("log", "-1", "--format=%H", f"--before={date}T00:00:00Z", H, "--", path) == want

# counts
assert git("rev-list", "--count", "--no-merges", "13.0.0..14.0.0", "--", "crates/ignore") == "76"
assert git("rev-list", "--count", "15.0.0..15.1.0") == "19"
assert git("log", "--format=%an", "14.1.1..15.0.0").split("\n").count("Andrew Gallant") == 72
tags26 = [l for l in git("tag", "-l", "ignore-*", "--merged", H, "--format=%(taggerdate:short)").split("\n") if l.startswith("2026")]
assert len(tags26) == 8
pulls = [json.load(open(f))["pull"] for f in glob.glob(f"{GUI}/pulls/*.json")]
issues = [json.load(open(f))["issue"] for f in glob.glob(f"{GUI}/issues/*.json")]
assert sum(1 for p in pulls if p["user"]["login"] == "hebasto" and p["created_at"].startswith("2021")) == 57
assert sum(1 for i in issues if "Bug" in [l["name"] for l in i["labels"]] and i["created_at"].startswith("2022")) == 25
assert sum(1 for p in pulls if (p.get("merged_by") or {}).get("login") == "laanwj" and (p.get("merged_at") or "").startswith("2021")) == 11
assert sum(1 for i in issues if i.get("state_reason") == "not_planned") == 10

# ids and split: per kind, shuffle with Random(2027), first round(0.4*n) -> dev
rng = random.Random(2027)
kinds = ["fixed-by", "filter", "count", "last-change", "first-release", "definition", "default", "doc-check"]
out = []
for k in kinds:
    ts = [t for t in T if t["kind"] == k]
    idxs = list(range(len(ts)))
    rng.shuffle(idxs)
    ndev = round(0.4 * len(ts))
    dev = set(idxs[:ndev])
    for j, t in enumerate(ts):
        out.append({"id": f"t-{k}-{j+1:02d}", "split": "dev" if j in dev else "test", "kind": k,
                    "task": t["task"], "parts": t["parts"], "why": t["why"]})
with open(os.path.join(HERE, "tasks.jsonl"), "w") as f:
    for o in out:
        f.write(json.dumps(o, ensure_ascii=False) + "\n")
print(len(out), "tasks written")
