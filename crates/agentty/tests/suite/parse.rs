//! `terminal` with `parse: true` through rmcp's client (docs/BEHAVIOUR.md §8): a real `git log`
//! and `df`, typed, checked against git's own machine format and `df --output`; the schemas as
//! resources.

use rmcp::model::ReadResourceRequestParams;
use serde_json::{Value, json};

use super::client::*;

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_DATE", "2026-11-30T10:00:00+01:00")
        .env("GIT_COMMITTER_DATE", "2026-11-30T10:00:00+01:00")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn git_log_is_typed_with_the_facts_git_itself_reports() {
    let server = start().await;
    let ws = server.workspace();
    git(ws, &["init", "-q"]);
    git(ws, &["config", "user.name", "Ada Lovelace"]);
    git(ws, &["config", "user.email", "ada@example.com"]);
    for (file, message) in [("a", "First commit\n\nWith a body."), ("b", "Second: ü")] {
        std::fs::write(ws.join(file), file).unwrap();
        git(ws, &["add", file]);
        git(ws, &["commit", "-q", "-m", message]);
    }
    let (text, s) = server
        .terminal(json!({"command": "git log", "parse": true}))
        .await;
    let parsed = &s["parsed"];
    assert_eq!(parsed["type"], "GitLog", "{text}");
    let commits = parsed["data"]["commits"].as_array().unwrap();
    let truth = git(ws, &["log", "--format=%H %at %s"]);
    assert_eq!(commits.len(), truth.lines().count());
    for (commit, line) in commits.iter().zip(truth.lines()) {
        let mut parts = line.splitn(3, ' ');
        assert_eq!(commit["hash"], parts.next().unwrap());
        assert_eq!(
            commit["date"]["epoch"].as_i64(),
            parts.next().unwrap().parse::<i64>().ok()
        );
        assert_eq!(commit["subject"], parts.next().unwrap());
        assert_eq!(commit["author"], "Ada Lovelace", "{commit}");
        assert_eq!(commit["author_email"], "ada@example.com", "{commit}");
    }
    // The model's text is the status line and the typed line, not git's own text as well.
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("[exit 0"), "{text}");
    let typed = lines.next().unwrap();
    let json_part = typed.strip_prefix("GitLog ").expect("typed line");
    // The same facts, the commits as a table (what every commit shares under `same`) and each
    // date as its RFC 3339 text.
    let table = &serde_json::from_str::<Value>(json_part).unwrap()["commits"];
    let columns = table["columns"].as_array().unwrap();
    let cell = |row: &Value, key: &str| match columns.iter().position(|c| c == key) {
        Some(i) => row[i].clone(),
        None => table["same"][key].clone(),
    };
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), commits.len());
    for (row, commit) in rows.iter().zip(commits) {
        assert_eq!(cell(row, "hash"), commit["hash"]);
        assert_eq!(cell(row, "date"), commit["date"]["rfc3339"]);
        assert_eq!(cell(row, "author"), "Ada Lovelace");
    }
    assert_eq!(
        table["same"]["author"], "Ada Lovelace",
        "one author: said once, {table}"
    );
    assert!(!text.contains("Author:"), "{text}");
}

#[tokio::test]
async fn the_schemas_are_resources_and_the_data_has_their_shape() {
    let server = start().await;
    let resources = server.client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris.len(), agentty_parse::TYPES.len(), "{uris:?}");
    let read = server
        .client
        .read_resource(ReadResourceRequestParams::new("agentty://schema/DiskUsage"))
        .await
        .unwrap();
    let rmcp::model::ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
        panic!("{read:?}");
    };
    let schema: Value = serde_json::from_str(text).unwrap();
    let (_, s) = server
        .terminal(json!({"command": "df -B1 .", "parse": true}))
        .await;
    assert_eq!(s["parsed"]["type"], "DiskUsage", "{s}");
    // Every field of a record is one the schema names for it.
    let record_schema = &schema["properties"]["filesystems"]["items"];
    let named = match record_schema.get("$ref").and_then(Value::as_str) {
        Some(r) => &schema["$defs"][r.trim_start_matches("#/$defs/")]["properties"],
        None => &record_schema["properties"],
    };
    for fs in s["parsed"]["data"]["filesystems"].as_array().unwrap() {
        for key in fs.as_object().unwrap().keys() {
            assert!(named.get(key).is_some(), "{key} not in {named}");
        }
    }
    let unknown = server
        .client
        .read_resource(ReadResourceRequestParams::new("agentty://schema/Nope"))
        .await;
    assert!(unknown.is_err(), "{unknown:?}");
}

/// A listing past the budget keeps its first and its last entries, whatever `data` would weigh:
/// the budget is the text the model reads. `ls -la` of 803 entries gave ~10 KB of text but kept
/// only the first 228 entries, measured on `data`; the last file was gone.
#[tokio::test]
async fn a_long_listing_keeps_its_first_and_last_entries() {
    let server = start().await;
    let dir = server.workspace().join("many");
    std::fs::create_dir(&dir).unwrap();
    for i in 0..800 {
        std::fs::write(dir.join(format!("file-{i:04}.txt")), "x").unwrap();
    }
    std::fs::write(dir.join("special.txt"), "x").unwrap();
    let (text, s) = server
        .terminal(json!({"command": "ls -la many", "parse": true}))
        .await;
    let parsed = &s["parsed"];
    assert_eq!(parsed["type"], "DirectoryListing", "{text}");
    let names: Vec<&str> = parsed["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    // 801 files, `.` and `..`: all of them fit in the model's 50 KB.
    assert_eq!(
        names.len(),
        803,
        "{}",
        &text[text.len().saturating_sub(400)..]
    );
    assert!(
        names.contains(&"special.txt"),
        "{:?}",
        &names[names.len() - 3..]
    );
    assert!(parsed.get("omitted").is_none(), "{}", parsed["omitted"]);
    assert!(text.len() <= 52 * 1024, "{}", text.len());
    // Past the budget, the first and the last are kept and the note says where the gap is.
    for i in 800..4000 {
        std::fs::write(dir.join(format!("file-{i:04}.txt")), "x").unwrap();
    }
    std::fs::write(dir.join("zz-last.txt"), "x").unwrap();
    let (text, s) = server
        .terminal(json!({"command": "ls -la many", "parse": true}))
        .await;
    let parsed = &s["parsed"];
    let entries = parsed["data"]["entries"].as_array().unwrap();
    let at = parsed["omitted_at"].as_u64().expect("omitted_at") as usize;
    let omitted = parsed["omitted"].as_u64().expect("omitted") as usize;
    // 4000 files, special.txt, zz-last.txt, `.` and `..`.
    assert_eq!(entries.len() + omitted, 4004, "{omitted}");
    assert_eq!(entries[0]["name"], ".");
    assert_eq!(entries.last().unwrap()["name"], "zz-last.txt");
    assert!(at > 0 && at < entries.len(), "{at}");
    assert!(
        text.contains(&format!("the first {at} and the last")),
        "{text}"
    );
    assert!(text.len() <= 52 * 1024, "{}", text.len());
}
