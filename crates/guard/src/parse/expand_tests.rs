use super::*;

fn place(env: Option<Vec<(&str, &str)>>) -> Place {
    Place {
        cwd: "/w/p".to_owned(),
        home: Some("/home/me".to_owned()),
        env: env.map(|v| {
            v.into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect()
        }),
    }
}

fn state_with(vars: &[(&str, &str)], place: &Place) -> State {
    let mut state = State::start(Some(place));
    for (k, v) in vars {
        state.assign(k, vec![Val::Text((*v).to_owned())], None);
    }
    state
}

fn words(raw: &str, vars: &[(&str, &str)], env: Option<Vec<(&str, &str)>>) -> Vec<Vec<String>> {
    let place = place(env);
    let state = state_with(vars, &place);
    let ex = Expander {
        state: &state,
        place: Some(&place),
    };
    ex.word(raw).unwrap_or_default()
}

fn one(raw: &str, vars: &[(&str, &str)]) -> Vec<String> {
    let mut all = words(raw, vars, None);
    assert_eq!(all.len(), 1, "{raw}: {all:?}");
    all.remove(0)
}

#[test]
fn variables_the_line_set_are_put_in_with_quoting_and_splitting() {
    assert_eq!(one("\"$D\"", &[("D", "$HOME")]), ["$HOME"]);
    assert_eq!(one("$D/*", &[("D", "")]), ["/*"]);
    assert_eq!(one("\"$D\"", &[("D", "")]), [""]);
    assert_eq!(one("$D", &[("D", "")]), Vec::<String>::new());
    assert_eq!(one("$F", &[("F", "-r -f")]), ["-r", "-f"]);
    assert_eq!(one("\"$F\"", &[("F", "-r -f")]), ["-r -f"]);
    assert_eq!(one("'$D'", &[("D", "x")]), ["$D"]);
    assert_eq!(one("${D}x", &[("D", "a")]), ["ax"]);
    assert_eq!(one("${D:-/}", &[("D", "")]), ["/"]);
    assert_eq!(one("${D:+/}", &[("D", "x")]), ["/"]);
    // Not assigned and no environment known: as written.
    assert_eq!(one("$OTHER/x", &[]), ["$OTHER/x"]);
    assert_eq!(one("$1", &[]), ["$1"]);
    assert_eq!(one("${D/x/z}", &[("D", "xy")]), ["${D/x/z}"]);
    assert_eq!(one("${D#x}", &[("D", "xy")]), ["y"]);
    assert_eq!(one("${D%/}", &[("D", "/home/me/")]), ["/home/me"]);
    assert_eq!(one("${D%/*}", &[("D", "/home/me/p")]), ["/home/me"]);
    assert_eq!(one("${D%%/*}", &[("D", "a/b/c")]), ["a"]);
    assert_eq!(one("${D##*/}", &[("D", "a/b/c")]), ["c"]);
    assert_eq!(one("${D#[a-c]}", &[("D", "bc")]), ["c"]);
    assert_eq!(one("$D", &[("D", "a"), ("D", "b")]), ["b"]);
}

#[test]
fn a_known_environment_makes_an_unset_variable_empty() {
    let env = || Some(vec![("OUT", "/w/out")]);
    let unset = "AGENTTY_TEST_SURELY_UNSET_VAR_2";
    assert_eq!(words(&format!("\"${unset}/\"*"), &[], env()), [["/*"]]);
    assert_eq!(words("\"$OUT\"", &[], env()), [["/w/out"]]);
    assert_eq!(words("$HOME", &[], env()), [["/home/me"]]);
    assert_eq!(words("$RANDOM", &[], env()), [["$RANDOM"]]);
    assert_eq!(
        words(&format!("${{{unset}:?}}"), &[], env()),
        Vec::<Vec<String>>::new()
    );
}

#[test]
fn known_substitutions_are_followed() {
    assert_eq!(one("\"$(dirname \"$HOME\")\"", &[]), ["$HOME/.."]);
    assert_eq!(one("$(dirname ~/x/y)", &[]), ["~/x"]);
    assert_eq!(one("$(dirname /home/me)", &[]), ["/home"]);
    assert_eq!(one("$(pwd)/..", &[]), ["/w/p/.."]);
    assert_eq!(one("`pwd`", &[]), ["/w/p"]);
    assert_eq!(one("$(realpath ../..)", &[]), ["/"]);
    assert_eq!(one("$(readlink -f \"$D\")", &[("D", "/usr/../")]), ["/"]);
    assert_eq!(one("$(echo $D)", &[("D", "/x")]), ["/x"]);
    assert_eq!(one("$(mktemp -d)", &[]), ["$(mktemp -d)"]);
    assert_eq!(one("$(dirname $(mktemp))", &[]), ["$(dirname $(mktemp))"]);
    assert_eq!(one("$(cd \"$(dirname \"$HOME\")\" && pwd)", &[]), ["/home"]);
    assert_eq!(one("$(cd && pwd)", &[]), ["/home/me"]);
    assert_eq!(
        one("$(cd $(mktemp -d) && pwd)", &[]),
        ["$(cd $(mktemp -d) && pwd)"]
    );
}

#[test]
fn values_are_not_split_and_take_tilde() {
    let place = place(None);
    let state = state_with(&[("A", "a b")], &place);
    let ex = Expander {
        state: &state,
        place: Some(&place),
    };
    assert_eq!(ex.value("$A"), [Val::Text("a b".into())]);
    assert_eq!(ex.value("~"), [Val::Text("~".into())]);
    assert_eq!(ex.value("\"$HOME\""), [Val::Text("$HOME".into())]);
}

#[test]
fn alternatives_multiply_boundedly() {
    let place = place(None);
    let mut state = State::start(Some(&place));
    state.assign(
        "D",
        vec![Val::Text("/".into()), Val::Text("/tmp/x".into())],
        None,
    );
    let ex = Expander {
        state: &state,
        place: Some(&place),
    };
    assert_eq!(
        ex.word("$D").unwrap_or_default(),
        [vec!["/".to_owned()], vec!["/tmp/x".to_owned()]]
    );
    assert!(ex.word("$D$D$D$D$D").unwrap_or_default().len() <= MAX_READINGS);
}
