"""The deploy/ files, checked against the repository: the YAML parses and has what Ray's
cluster launcher and KubeRay need, the image installs this package from files that exist,
and the spec the manifests run is a valid pool. Also: joining a cluster that cannot be
reached fails fast, and a pool that listens beyond loopback needs a secret file."""

from __future__ import annotations

import os
import re
import shlex
import stat
from pathlib import Path

import pytest
import ray
import yaml

from mockpool.auth import make_secret, write_token
from mockpool.cli.main import main
from mockpool.pool.cluster import ClusterError, probe_address
from mockpool.pool.layout import actor_plans, find_actor
from mockpool.pool.spec import parse_spec
from mockpool.pool.specmodel import SpecError

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
IMAGE_SPEC = "/home/ray/mockpool/deploy/pool.toml"


def _yaml(name: str) -> dict:
    return yaml.safe_load((DEPLOY / name).read_text())


def test_cluster_launcher_yaml_has_what_ray_up_needs() -> None:
    c = _yaml("ray-cluster.yaml")
    for key in ("cluster_name", "provider", "auth", "available_node_types", "head_node_type"):
        assert key in c, key
    assert c["head_node_type"] in c["available_node_types"]
    assert c["provider"]["type"] == "local" and c["provider"]["head_ip"]
    assert any("ray start --head" in cmd for cmd in c["head_start_ray_commands"])
    assert any("ray start --address" in cmd for cmd in c["worker_start_ray_commands"])
    assert c["docker"]["image"] == "mockpool:latest"


def _containers(template: dict) -> list[dict]:
    return template["spec"]["containers"]


@pytest.mark.parametrize("name", ["kuberay/raycluster.yaml", "kuberay/rayjob.yaml"])
def test_kuberay_manifests_have_a_head_and_workers_on_the_image(name: str) -> None:
    doc = _yaml(name)
    assert doc["apiVersion"] == "ray.io/v1"
    spec = doc["spec"] if doc["kind"] == "RayCluster" else doc["spec"]["rayClusterSpec"]
    assert doc["kind"] in ("RayCluster", "RayJob")
    head = spec["headGroupSpec"]
    assert "rayStartParams" in head
    groups = spec["workerGroupSpecs"]
    assert groups and all(g["replicas"] >= 1 and "rayStartParams" in g for g in groups)
    for template in [head["template"], *(g["template"] for g in groups)]:
        (container,) = _containers(template)
        assert container["image"] == "mockpool:latest"
        assert "/etc/mockpool" in {m["mountPath"] for m in container["volumeMounts"]}


def test_the_rayjob_runs_the_deploy_spec_on_its_own_cluster() -> None:
    job = _yaml("kuberay/rayjob.yaml")
    argv = shlex.split(job["spec"]["entrypoint"])
    assert argv[:2] == ["mockpool", "run"] and argv[2] == IMAGE_SPEC
    assert argv[argv.index("--address") + 1] == "auto"


def test_the_dockerfile_copies_files_that_exist_and_installs_this_package() -> None:
    lines = (DEPLOY / "Dockerfile").read_text().splitlines()
    copies = [line.split()[1:] for line in lines if line.startswith("COPY")]
    assert copies
    for args in copies:
        sources = [a for a in args[:-1] if not a.startswith("--")]
        for src in sources:
            assert (ROOT / src).exists(), f"Dockerfile copies {src}, which is not in the repo"
    workdir = next(line.split()[1] for line in lines if line.startswith("WORKDIR"))
    assert (workdir + "/deploy/pool.toml") == IMAGE_SPEC
    run = " ".join(line for line in lines if line.startswith("RUN"))
    assert re.search(r"pip install .*\s\.(\s|$)", run)  # this package, from the copy
    assert "pyproject.toml" in " ".join(" ".join(a) for a in copies)
    assert (ROOT / "pyproject.toml").read_text().count('name = "mockpool"') == 1


def test_the_deploy_spec_is_a_valid_pool_with_its_secret(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    write_token(secret, make_secret())
    text = (DEPLOY / "pool.toml").read_text()
    assert 'secret_file = "/etc/mockpool/secret"' in text
    spec = parse_spec(text.replace("/etc/mockpool/secret", str(secret)), "deploy/pool.toml")
    assert spec.host == "routable" and spec.secret_file == str(secret)
    assert spec.placement == {"central": "head", "startds": "spread"}
    assert len(spec.machine_names) == 200 and spec.submits


def test_a_pool_beyond_loopback_without_a_secret_file_refuses_to_start() -> None:
    with pytest.raises(SpecError, match=r"<t>:3: \[pool\] host: 'routable' is not loopback"):
        parse_spec('[pool]\ntime_scale = 10\nhost = "routable"\n', "<t>")
    with pytest.raises(SpecError, match=r"host: '0\.0\.0\.0' is not loopback.*secret_file"):
        parse_spec('[pool]\nhost = "0.0.0.0"\n', "<t>")


def test_a_secret_file_others_can_read_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text(make_secret())
    secret.chmod(0o644)
    with pytest.raises(SpecError, match="secret_file"):
        parse_spec(f'[pool]\nhost = "routable"\nsecret_file = "{secret}"\n', "<t>")


def test_bad_placement_is_refused() -> None:
    with pytest.raises(SpecError, match=r"\[placement\] startds: must be one of spread, pack"):
        parse_spec('[placement]\nstartds = "heap"\n', "<t>")
    with pytest.raises(SpecError, match=r"\[placement\] negotiator: must be one of central, own"):
        parse_spec('[placement]\nnegotiator = "apart"\n', "<t>")


def test_a_negotiator_of_its_own_is_an_actor_apart_from_the_collector() -> None:
    text = "[[startds]]\ncount = 2\n[[schedds]]\ncount = 1\n"
    plans = actor_plans(parse_spec(text, "<t>"))
    assert [(p.name, p.role, p.daemons) for p in plans[:1]] == [
        ("central", "central", ("collector", "negotiator"))
    ]
    plans = actor_plans(parse_spec(text + '[placement]\nnegotiator = "own"\n', "<t>"))
    assert [(p.name, p.role, p.daemons) for p in plans[:2]] == [
        ("central", "central", ("collector",)),
        ("negotiator", "negotiator", ("negotiator",)),
    ]
    # a fault on the negotiator acts on its actor alone; on the collector, on central's
    assert find_actor(plans, "negotiator") is plans[1]
    assert find_actor(plans, "collector") is plans[0]


def test_an_unreachable_cluster_fails_fast_with_a_clear_message(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ClusterError, match=r"cannot reach the Ray cluster at 127\.0\.0\.1:1"):
        probe_address("127.0.0.1:1")
    with pytest.raises(ClusterError, match="expected host:port"):
        probe_address("nowhere")

    # refused by the probe (a connect with a 3 s timeout), before Ray is asked to join
    # (which retries for a minute or more)
    def no_init(*args: object, **kwargs: object) -> None:
        raise AssertionError("ray.init was called for an unreachable address")

    monkeypatch.setattr(ray, "init", no_init)
    assert main(["run", str(ROOT / "examples" / "pslot.toml"), "--address", "127.0.0.1:1"]) == 1
    assert "cannot reach the Ray cluster at 127.0.0.1:1" in capsys.readouterr().err


# ------------------------------------------------------------------ KubeRay: starts, keeps

KUBERAY = ["kuberay/raycluster.yaml", "kuberay/rayjob.yaml"]


def _docs(name: str) -> list[dict]:
    return list(yaml.safe_load_all((DEPLOY / name).read_text()))


def _cluster_spec(doc: dict) -> dict:
    return doc["spec"] if doc["kind"] == "RayCluster" else doc["spec"]["rayClusterSpec"]


def _pod_templates(doc: dict) -> list[dict]:
    if doc["kind"] == "Pod":
        return [doc]
    spec = _cluster_spec(doc)
    return [spec["headGroupSpec"]["template"], *(g["template"] for g in spec["workerGroupSpecs"])]


def _image_user() -> tuple[int, int]:
    """The Dockerfile's last USER, uid:gid by number."""
    users = [
        ln.split()[1]
        for ln in (DEPLOY / "Dockerfile").read_text().splitlines()
        if ln.startswith("USER")
    ]
    uid, _, gid = users[-1].partition(":")
    return int(uid), int(gid)


def _metrics_port() -> int:
    text = (DEPLOY / "pool.toml").read_text()
    return int(re.search(r"^metrics_port = (\d+)$", text, re.M).group(1))


def test_the_image_runs_as_a_non_root_user_by_number() -> None:
    uid, gid = _image_user()  # a number: runAsNonRoot can check it without a passwd file
    assert uid != 0 and gid != 0


@pytest.mark.parametrize("name", [*KUBERAY, "kuberay/outputs-reader.yaml"])
def test_every_pod_is_non_root_with_an_fsgroup_and_pulls_only_if_absent(name: str) -> None:
    uid, gid = _image_user()
    for doc in _docs(name):
        for template in _pod_templates(doc):
            ctx = template["spec"]["securityContext"]
            assert ctx["runAsNonRoot"] is True
            assert (ctx["runAsUser"], ctx["runAsGroup"], ctx["fsGroup"]) == (uid, gid, gid)
            for c in template["spec"]["containers"]:
                assert c["imagePullPolicy"] == "IfNotPresent", c["name"]


@pytest.mark.parametrize("name", KUBERAY)
def test_the_mounted_secret_is_one_the_pool_accepts(name: str) -> None:
    """The kubelet gives a secret volume's files to root:fsGroup and adds group read to
    defaultMode: the pool, running as runAsUser in fsGroup, must accept that file."""
    from mockpool.poolsecret import check_file

    for template in _pod_templates(_docs(name)[0]):
        ctx = template["spec"]["securityContext"]
        (vol,) = [v for v in template["spec"]["volumes"] if "secret" in v]
        mode = vol["secret"]["defaultMode"] | 0o440
        st = os.stat_result((stat.S_IFREG | mode, 1, 1, 1, 0, ctx["fsGroup"], 44, 0, 0, 0))
        check_file("/etc/mockpool/secret", st, ctx["runAsUser"], frozenset({ctx["fsGroup"]}))


@pytest.mark.parametrize("name", KUBERAY)
def test_ray_token_auth_is_on(name: str) -> None:
    assert _cluster_spec(_docs(name)[0])["authOptions"] == {"mode": "token"}


def test_the_rayjobs_outputs_go_to_a_volume_that_outlives_the_pod() -> None:
    job = _docs("kuberay/rayjob.yaml")[0]
    out = shlex.split(job["spec"]["entrypoint"])
    out_dir = out[out.index("--out") + 1]
    head = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    (mount,) = [
        m for m in head["containers"][0]["volumeMounts"] if out_dir.startswith(m["mountPath"] + "/")
    ]
    (volume,) = [v for v in head["volumes"] if v["name"] == mount["name"]]
    claim = volume["persistentVolumeClaim"]["claimName"]
    pvcs = [d for d in _docs("kuberay/outputs.yaml") if d["kind"] == "PersistentVolumeClaim"]
    assert [d["metadata"]["name"] for d in pvcs] == [claim]
    (reader,) = _docs("kuberay/outputs-reader.yaml")
    assert reader["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == claim


@pytest.mark.parametrize("name", KUBERAY)
def test_the_metrics_service_reaches_the_heads_metrics_port(name: str) -> None:
    port = _metrics_port()
    (svc,) = [d for d in _docs("kuberay/outputs.yaml") if d["kind"] == "Service"]
    (sp,) = svc["spec"]["ports"]
    head = _cluster_spec(_docs(name)[0])["headGroupSpec"]["template"]
    labels = {**head["metadata"]["labels"], "ray.io/node-type": "head"}  # KubeRay's label
    assert svc["spec"]["selector"].items() <= labels.items()
    named = {p["name"]: p["containerPort"] for p in head["spec"]["containers"][0]["ports"]}
    assert sp["port"] == named[sp["targetPort"]] == port


def test_the_readme_documents_ray_auth_and_every_port() -> None:
    readme = (DEPLOY / "README.md").read_text()
    assert "RAY_AUTH_MODE=token" in readme and "RAY_AUTH_TOKEN" in readme
    ports = {
        p["containerPort"]
        for d in KUBERAY
        for p in _cluster_spec(_docs(d)[0])["headGroupSpec"]["template"]["spec"]["containers"][0][
            "ports"
        ]
    }
    table = readme[readme.index("## Ports") :]
    for port in ports:
        assert f"| {port} |" in table or f"({port} in `deploy/pool.toml`)" in table, port
    launcher = _yaml("ray-cluster.yaml")["docker"]["run_options"]
    assert "--env RAY_AUTH_MODE=token" in launcher
