//! `TestReport` from real jest and vitest runs (from `tests/parse-tools`, `npm ci` there
//! first) on a node project made for the test, with known passing, failing and skipped tests:
//! the parsed counts, names and failure locations compared with what the sources say.

// The helpers below run outside `#[test]` functions, where clippy's allow-unwrap-in-tests does
// not reach; in a test a failed unwrap is the failure report.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use tempfile::TempDir;

use super::needs;
use super::test_report::{counts, line_of, parsed, run};

const SUM_TEST: &str = "describe('sum', () => {
  test('adds 1 + 2', () => {
    expect(sum(1, 2)).toBe(3);
  });
  test('adds 2 + 2 to equal 5', () => {
    expect(sum(2, 2)).toBe(5);
  });
  test.skip('is skipped', () => {});
  test('throws on strings', () => {
    sum('a', 2);
  });
});
";

const SUM: &str = "function sum(a, b) {
  if (typeof a === 'string') {
    return a.missing.length;
  }
  return a + b;
}
";

/// A report of the sum project: 3 passed, 2 failed, 1 skipped; the assertion fails in the test
/// file, the TypeError in the source (`sum_file`), at the lines the sources say.
fn check_sum_report(report: &Value, tool: &str, test_file: &str, sum_file: &str, test: &str) {
    assert_eq!(report["tool"], tool, "{report}");
    assert_eq!(report["outcome"], "failed", "{report}");
    assert_eq!(counts(report), (3, 2, 1), "{report}");
    let failures = report["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 2, "{report}");
    let place = |f: &Value| (f["file"].clone(), f["line"].as_u64());
    let assertion = &failures[0];
    assert!(
        assertion["name"]
            .as_str()
            .unwrap()
            .ends_with("adds 2 + 2 to equal 5"),
        "{assertion}"
    );
    assert_eq!(
        place(assertion),
        (
            test_file.into(),
            Some(line_of(test, "expect(sum(2, 2)).toBe(5)"))
        )
    );
    assert!(
        assertion["message"].as_str().unwrap().contains('5'),
        "{assertion}"
    );
    let thrown = &failures[1];
    assert!(
        thrown["name"]
            .as_str()
            .unwrap()
            .ends_with("throws on strings"),
        "{thrown}"
    );
    assert_eq!(
        place(thrown),
        (sum_file.into(), Some(line_of(SUM, "a.missing.length"))),
        "the first frame outside node_modules: {thrown}"
    );
    assert!(
        thrown["message"]
            .as_str()
            .unwrap()
            .starts_with("TypeError: Cannot read properties of undefined"),
        "{thrown}"
    );
}

/// The sum project: `src/sum.js`, `src/sum.test.js` (`test_prelude` + [`SUM_TEST`]),
/// `src/math.test.js` (two passing tests after `math_prelude`), `package.json`. Returns the
/// directory and the text of `sum.test.js`.
fn sum_project(
    sum_js: &str,
    test_prelude: &str,
    math_prelude: &str,
    package_json: &str,
) -> (TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let sum_test = format!("{test_prelude}{SUM_TEST}");
    let math_test = format!(
        "{math_prelude}test('multiplies', () => {{ expect(2 * 3).toBe(6); }});\ntest('divides', () => {{ expect(6 / 3).toBe(2); }});\n"
    );
    for (path, text) in [
        (src.join("sum.js"), sum_js),
        (src.join("sum.test.js"), &sum_test),
        (src.join("math.test.js"), &math_test),
        (dir.path().join("package.json"), package_json),
    ] {
        std::fs::write(path, text).unwrap();
    }
    (dir, sum_test)
}

#[test]
#[ignore = "needs node tools: scripts/test runs it after npm ci --prefix tests/parse-tools"]
fn jest_and_vitest_on_a_real_project_needs_node_tools() {
    let modules = needs::node_tools();
    let no_color = [("NO_COLOR", "1"), ("CI", "1")];

    // jest: CommonJS, globals.
    let (dir, jest_test) = sum_project(
        &format!("{SUM}module.exports = {{ sum }};\n"),
        "const { sum } = require('./sum');\n\n",
        "",
        r#"{"name":"sum","private":true}"#,
    );
    let jest = modules.join(".bin/jest");
    let mut run_jest = run(dir.path(), jest.to_str().unwrap(), &["jest"], &no_color);
    run_jest.argv = vec!["npx".into(), "jest".into()];
    assert_eq!(run_jest.code, Some(1), "{}", run_jest.stderr);
    check_sum_report(
        &parsed(&run_jest),
        "jest",
        "src/sum.test.js",
        "src/sum.js",
        &jest_test,
    );

    // vitest: an ES module project that imports vitest from its node_modules.
    let (dir, vitest_test) = sum_project(
        &format!("export {SUM}"),
        "import { describe, expect, test } from 'vitest';\nimport { sum } from './sum.js';\n\n",
        "import { expect, test } from 'vitest';\n",
        r#"{"name":"sum","private":true,"type":"module"}"#,
    );
    std::os::unix::fs::symlink(&modules, dir.path().join("node_modules")).unwrap();
    let vitest = modules.join(".bin/vitest");
    let run_vitest = run(
        dir.path(),
        vitest.to_str().unwrap(),
        &["vitest", "run"],
        &no_color,
    );
    assert_eq!(run_vitest.code, Some(1), "{}", run_vitest.stderr);
    check_sum_report(
        &parsed(&run_vitest),
        "vitest",
        "src/sum.test.js",
        "src/sum.js",
        &vitest_test,
    );
}
