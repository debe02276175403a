//! deploy/grafana: the dashboard reads the provisioned data source, Grafana finds it
//! where the compose file mounts it, and it has a row for each thing operators watch.

use serde_json::Value;

use crate::repo;

fn yaml(path: &str) -> serde_yaml::Value {
    serde_yaml::from_str(&std::fs::read_to_string(repo().join(path)).unwrap())
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn dashboard() -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(repo().join("deploy/grafana/agent-pages.json")).unwrap(),
    )
    .expect("the dashboard is JSON")
}

/// Every `expr` of the dashboard's panels.
pub fn dashboard_expressions() -> Vec<String> {
    dashboard()["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().into_iter().flatten())
        .map(|t| {
            t["expr"]
                .as_str()
                .expect("every target has an expr")
                .to_owned()
        })
        .collect()
}

#[test]
fn every_panel_reads_the_provisioned_prometheus() {
    let sources = yaml("deploy/grafana/provisioning/datasources/prometheus.yml");
    let source = &sources["datasources"][0];
    assert_eq!(source["type"].as_str(), Some("prometheus"));
    assert_eq!(source["url"].as_str(), Some("http://prometheus:9090"));
    let uid = source["uid"].as_str().unwrap();

    let dashboard = dashboard();
    let mut ids = std::collections::HashSet::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        assert!(
            ids.insert(panel["id"].as_i64().unwrap()),
            "panel ids unique"
        );
        if panel["type"] == "row" {
            continue;
        }
        let title = panel["title"].as_str().unwrap();
        assert_eq!(panel["datasource"]["uid"].as_str(), Some(uid), "{title}");
        let targets = panel["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "{title} draws nothing");
        for target in targets {
            assert_eq!(target["datasource"]["uid"].as_str(), Some(uid), "{title}");
        }
    }
}

#[test]
fn the_dashboard_has_a_row_per_gate_and_per_store_and_face() {
    let dashboard = dashboard();
    let rows: Vec<String> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "row")
        .map(|p| p["title"].as_str().unwrap().to_lowercase())
        .collect();
    for topic in [
        "validation",
        "429s by window",
        "cache",
        "scoring",
        "503s by cause",
        "stores per replica",
        "pin failures",
        "mcp",
    ] {
        assert!(
            rows.iter().any(|r| r.contains(topic)),
            "no row about {topic}: {rows:?}"
        );
    }
    let expressions = dashboard_expressions().join("\n");
    for needle in [
        "agent_pages_search_scoring_seconds_bucket",
        "histogram_quantile(0.5,",
        "histogram_quantile(0.99,",
        "agent_pages_search_cache_max_bytes",
        "agent_pages_search_scorer_slots_refused_total",
        "outcome=~\"429-.*\"",
        "outcome=~\"503-.*\"",
    ] {
        assert!(expressions.contains(needle), "no panel uses {needle}");
    }
}

/// The provider's folder is where docker-compose.yml mounts the dashboard, and the
/// provisioning folder is mounted where Grafana reads it.
#[test]
fn grafana_finds_the_dashboard_where_the_compose_file_mounts_it() {
    let provider = yaml("deploy/grafana/provisioning/dashboards/agent-pages.yml");
    let folder = provider["providers"][0]["options"]["path"]
        .as_str()
        .unwrap();
    let compose = yaml("docker-compose.yml");
    let volumes: Vec<&str> = compose["services"]["grafana"]["volumes"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(
        volumes.contains(
            &format!("./deploy/grafana/agent-pages.json:{folder}/agent-pages.json:ro").as_str()
        ),
        "{volumes:?}"
    );
    assert!(
        volumes.contains(&"./deploy/grafana/provisioning:/etc/grafana/provisioning:ro"),
        "{volumes:?}"
    );
}
