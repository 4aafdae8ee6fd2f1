use super::*;

#[test]
fn bare_cd_is_detected_only_alone() {
    assert_eq!(bare_cd_target("cd src"), Some("src".into()));
    assert_eq!(bare_cd_target("  cd  "), Some("~".into()));
    assert_eq!(bare_cd_target("cd src && ls"), None);
    assert_eq!(bare_cd_target("cd a b"), None);
    assert_eq!(bare_cd_target("cdx src"), None);
}

/// The guard judges `terminal` with the environment the command will run with: a variable
/// unset there (and not given in `env`) is empty, so `"$X/"*` is `/*`. Nothing is run here.
#[test]
fn a_variable_unset_in_the_commands_environment_is_judged_empty() {
    let dir = std::env::temp_dir();
    let workspace = Workspace::new(dir.canonicalize().unwrap(), Vec::new()).unwrap();
    let judge_fed = |command: &str, stdin: Option<&str>, env: &[(&str, &str)]| {
        let params = TerminalParams {
            command: Some(command.to_owned()),
            argv: None,
            workdir: None,
            env: Some(
                env.iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            stdin: stdin.map(ToOwned::to_owned),
            timeout_ms: None,
            sandbox_permissions: None,
            justification: None,
            background: None,
            on_timeout: None,
            pty: None,
            parse: None,
        };
        prepare(
            params,
            Path::new("/bin/sh"),
            &workspace,
            &GuardConfig::default(),
            1000,
        )
    };
    let judge = |command: &str, env: &[(&str, &str)]| judge_fed(command, None, env);
    let line = "rm -rf \"$AGENTTY_STEAMROOT_UNSET/\"*";
    let refused = judge(line, &[]).unwrap_err();
    assert!(refused.contains("rm-root"), "{refused}");
    assert!(judge(line, &[("AGENTTY_STEAMROOT_UNSET", "/tmp/x")]).is_ok());
    // The same line as a script on a shell's stdin runs with the same environment.
    let refused = judge_fed("bash", Some(line), &[]).unwrap_err();
    assert!(
        refused.contains("stdin") && refused.contains("rm-root"),
        "{refused}"
    );
    assert!(judge_fed("bash", Some(line), &[("AGENTTY_STEAMROOT_UNSET", "/tmp/x")]).is_ok());
}
