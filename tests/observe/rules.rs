//! `promtool check` and `promtool test rules` over deploy/prometheus.

use std::process::{Command, Output};

use crate::{promtool, repo};

fn promtool_in(dir: &std::path::Path, args: &[&str]) -> Output {
    let output = Command::new(promtool())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("running promtool");
    assert!(
        output.status.success(),
        "promtool {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn alert_names() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("deploy/prometheus/alerts.yml")).unwrap();
    let rules: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    rules["groups"]
        .as_sequence()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_sequence().unwrap().iter())
        .filter_map(|r| r["alert"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn the_alert_rules_pass_promtool_check_rules() {
    let output = promtool_in(
        &repo().join("deploy/prometheus"),
        &["check", "rules", "alerts.yml"],
    );
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(said.contains("SUCCESS"), "{said}");
}

#[test]
fn every_alert_fires_and_stays_quiet_in_the_rule_unit_tests() {
    let dir = repo().join("deploy/prometheus");
    promtool_in(&dir, &["test", "rules", "alerts.test.yml"]);

    // Every alert is tested both ways: once with alerts expected, once with none.
    let tests = std::fs::read_to_string(dir.join("alerts.test.yml")).unwrap();
    let tests: serde_yaml::Value = serde_yaml::from_str(&tests).unwrap();
    let cases: Vec<(&str, bool)> = tests["tests"]
        .as_sequence()
        .unwrap()
        .iter()
        .flat_map(|t| t["alert_rule_test"].as_sequence().unwrap().iter())
        .map(|case| {
            let fires = case["exp_alerts"]
                .as_sequence()
                .is_some_and(|a| !a.is_empty());
            (case["alertname"].as_str().unwrap(), fires)
        })
        .collect();
    let names = alert_names();
    assert!(names.len() >= 6, "{names:?}");
    for name in &names {
        for fires in [true, false] {
            assert!(
                cases.contains(&(name.as_str(), fires)),
                "alerts.test.yml has no case where {name} {}",
                if fires { "fires" } else { "stays quiet" }
            );
        }
        // Each has what on-call needs: a summary and its runbook section.
        let text = std::fs::read_to_string(dir.join("alerts.yml")).unwrap();
        let anchor = format!("docs/deploy.md#{}", name.to_lowercase());
        assert!(text.contains(&anchor), "{name} has no runbook {anchor}");
        let deploy = std::fs::read_to_string(repo().join("docs/deploy.md")).unwrap();
        assert!(
            deploy
                .lines()
                .any(|l| l.starts_with('#') && l.trim_start_matches('#').trim() == name),
            "docs/deploy.md has no runbook section {name}"
        );
    }
}

/// A deliberately broken rule fails `promtool test rules`: the unit tests can fail.
#[test]
fn the_rule_unit_tests_fail_when_an_alert_threshold_is_broken() {
    let dir = tempfile::tempdir().unwrap();
    let source = repo().join("deploy/prometheus");
    let alerts = std::fs::read_to_string(source.join("alerts.yml")).unwrap();
    // The budget store alert wanting six in ten calls to fail, not one in ten.
    let broken = alerts.replacen("> 0.1\n", "> 0.6\n", 1);
    assert_ne!(broken, alerts);
    std::fs::write(dir.path().join("alerts.yml"), broken).unwrap();
    std::fs::copy(
        source.join("alerts.test.yml"),
        dir.path().join("alerts.test.yml"),
    )
    .unwrap();
    let output = Command::new(promtool())
        .args(["test", "rules", "alerts.test.yml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(said.contains("AgentPagesBudgetStoreFailing"), "{said}");
}

/// The configuration, with its rule file where the container mounts it moved to the
/// repository's copy.
#[test]
fn the_prometheus_configuration_passes_promtool_check_config() {
    let dir = tempfile::tempdir().unwrap();
    let source = repo().join("deploy/prometheus");
    let config = std::fs::read_to_string(source.join("prometheus.yml")).unwrap();
    assert!(config.contains("/etc/prometheus/alerts.yml"));
    let config = config.replace(
        "/etc/prometheus/alerts.yml",
        source.join("alerts.yml").to_str().unwrap(),
    );
    std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
    let output = promtool_in(dir.path(), &["check", "config", "prometheus.yml"]);
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        said.contains("is valid prometheus config file") && said.contains("alerts.yml"),
        "{said}"
    );
}
