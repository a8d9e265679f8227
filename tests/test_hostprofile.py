"""Host profiles (models.sim.hostprofile): the schema's checks, Scenario(host=...) and
``python -m models.sim --host FILE`` (the profile changes the result; command-line options win)."""

from __future__ import annotations

import json

import pytest

from models.sim import hostprofile as hp
from models.sim.cli import main as sim_main
from models.sim.engine import simulate
from models.sim.scenario import Scenario


def _profile(**host) -> dict:
    return {
        "schema": hp.SCHEMA,
        "version": hp.VERSION,
        "machine": {
            "kernel": "6.1.0-test",
            "config_hz": 250,
            "congestion_control": "cubic",
            "date": "2026-01-01T00:00:00+00:00",
        },
        "host": host or {"wake_s": 30e-6, "proc_s": 5e-6, "send_cpu_s": 2e-6},
    }


def test_a_valid_profile_loads_and_gives_both_sides():
    d = _profile()
    d["server"] = {"proc_s": 9e-6}
    p = hp.validate(d)
    assert p.side("server") == {"wake_s": 30e-6, "proc_s": 9e-6, "send_cpu_s": 2e-6}
    assert p.side("client")["proc_s"] == 5e-6
    assert hp.validate(p.to_dict()) == p  # round trip
    with pytest.raises(ValueError, match="side must be"):
        p.side("middle")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"version": 2}, r"version must be 1 \(this reader's\), got 2"),
        ({"schema": "other"}, "schema must be 'queue-depth-host-profile'"),
        ({"colour": "blue"}, "unknown key 'colour'"),
        ({"host": {"nodelay": True}}, "host.nodelay is not a cost a profile may set"),
        ({"host": {"wake_s": 3.0}}, r"host.wake_s must be in \[5e-07, 0.0002\] seconds .*got 3.0"),
        ({"host": {"proc_s": -1e-6}}, r"host.proc_s must be in \[0, 0.001\]"),
        ({"host": {"send_cpu_s": "1us"}}, "host.send_cpu_s must be a number of seconds"),
        ({"host": {"tx_cpu_s": float("nan")}}, "host.tx_cpu_s must be in"),
        ({"client": {"gso_cpu_s": 1.0}}, r"client.gso_cpu_s must be in \[0, 5e-05\]"),
        ({"provenance": {"wake_s": 3}}, "provenance must map fields to text"),
        ({"host": {"send_cpu_first": 1}}, "host.send_cpu_first must be true or false, got 1"),
    ],
)
def test_bad_profiles_name_the_field_range_and_value(change, message):
    with pytest.raises(ValueError, match=message):
        hp.validate({**_profile(), **change})


def test_a_flag_loads_and_reaches_the_simulator():
    p = hp.validate(_profile(send_cpu_s=2e-6, gso_cpu_s=3e-6, send_cpu_first=True))
    assert p.side("server")["send_cpu_first"] is True and "send_cpu_first on" in p.describe()
    from models.sim import simulate

    on = simulate(workload={"qd": 1}, host=p, client={"nodelay": True}, server={"nodelay": True})
    off = simulate(workload={"qd": 1}, host=hp.validate(_profile(send_cpu_s=2e-6, gso_cpu_s=3e-6)),
                   client={"nodelay": True}, server={"nodelay": True})  # fmt: skip
    assert on.rtt_mean_s > off.rtt_mean_s


def test_machine_fields_are_checked():
    d = _profile()
    del d["machine"]["config_hz"]
    with pytest.raises(ValueError, match=r"machine.config_hz is missing"):
        hp.validate(d)
    d = _profile()
    d["machine"]["config_hz"] = 7
    with pytest.raises(ValueError, match=r"machine.config_hz must be null or 10..10000, got 7"):
        hp.validate(d)
    d = _profile()
    d["machine"]["owner"] = "me"
    with pytest.raises(ValueError, match="machine.owner is not a machine field"):
        hp.validate(d)


def test_every_range_holds_its_lower_bound_and_states_a_source():
    for name, r in hp.COST_RANGES.items():
        top = 1e-3 if r.unit == "seconds" else 1.0  # a second's thousandth; a share below 1
        assert 0 <= r.lo_s < r.hi_s <= top, name
        assert r.source, name
        assert name in Scenario().server.specs()  # a Host field


def test_load_from_a_file_names_the_file(tmp_path):
    good = tmp_path / "p.json"
    good.write_text(json.dumps(_profile()))
    assert hp.load(good).host["wake_s"] == 30e-6
    assert hp.load(str(good)) == hp.load(good)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**_profile(), "version": 0}))
    with pytest.raises(ValueError, match=r"version must be 1.*in .*bad.json"):
        hp.load(bad)
    (tmp_path / "text.json").write_text("not json")
    with pytest.raises(ValueError, match="not JSON"):
        hp.load(tmp_path / "text.json")
    with pytest.raises(ValueError, match="cannot read it"):
        hp.load(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="host must be a host profile"):
        hp.load(42)


def test_scenario_host_applies_the_profile_under_explicit_values():
    d = _profile()
    sc = Scenario(host=d, server={"wake_s": 7e-6})
    assert sc.client.wake_s == 30e-6 and sc.server.wake_s == 7e-6  # explicit wins
    assert sc.server.proc_s == 5e-6 and sc.client.send_cpu_s == 2e-6
    # fields the profile does not set keep the default hosts' values
    assert sc.server.tx_cpu_s == Scenario().server.tx_cpu_s
    # a Host given whole replaces the profile's for that side
    whole = Scenario().client.replace(proc_s=1e-6)
    assert Scenario(host=d, client=whole).client == whole
    # the profile's hosts survive replace()
    assert sc.replace(workload={"qd": 2}).client.wake_s == 30e-6


def test_the_profile_changes_the_simulated_result():
    fast = _profile(wake_s=1e-6, proc_s=1e-6)
    slow = _profile(wake_s=150e-6, proc_s=300e-6)
    base = dict(server={"nodelay": True}, run={"ops": 200})
    a = simulate(Scenario(host=fast, **base))
    b = simulate(Scenario(host=slow, **base))
    assert b.rtt_percentile_s(50) > a.rtt_percentile_s(50) + 2 * (150e-6 + 300e-6) * 0.9


def _run_cli(capsys, *argv) -> dict:
    assert sim_main([*argv, "--json", "--server-nodelay", "true", "--ops", "200"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_host_loads_the_profile_and_options_override_it(tmp_path, capsys):
    path = tmp_path / "host.json"
    path.write_text(json.dumps(_profile(wake_s=150e-6, proc_s=300e-6)))
    plain = _run_cli(capsys)
    with_host = _run_cli(capsys, "--host", str(path))
    assert with_host["scenario"]["server"]["proc_s"] == 300e-6
    assert with_host["scenario"]["client"]["wake_s"] == 150e-6
    assert with_host["host_profile"]["machine"]["kernel"] == "6.1.0-test"
    assert with_host["rtt_mean_s"] > plain["rtt_mean_s"] + 300e-6
    override = _run_cli(capsys, "--host", str(path), "--server-proc-s", "2e-6")
    assert override["scenario"]["server"]["proc_s"] == 2e-6  # the option wins
    assert override["scenario"]["client"]["proc_s"] == 300e-6  # the profile elsewhere
    assert override["rtt_mean_s"] < with_host["rtt_mean_s"]
    explained = _run_cli(capsys, "--host", str(path), "--explain")
    assert explained["scenario"]["server"]["proc_s"] == 300e-6 and "explain" in explained


def test_cli_host_errors_are_one_line(tmp_path, capsys):
    path = tmp_path / "host.json"
    path.write_text(json.dumps(_profile(wake_s=1.0)))
    assert sim_main(["--host", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: host profile: host.wake_s must be in") and "\n" not in err


def test_the_shipped_profile_is_of_the_kernel_datasets_machine():
    from models.data.descriptor import read_descriptor

    p = hp.shipped()
    meta = read_descriptor("kernel6_iscsi_loop")[0]["measurement"]["kernel"]
    # the same kernel version (a later build of the same image), HZ and CPU count
    assert p.machine["kernel"].split("-")[0] == meta["release"].split("-")[0]
    assert p.machine["config_hz"] == meta["config_hz"]
    assert p.machine["cpus"] == meta["cpus"]
    # and the very build the field sweep ran on, which its training rows fit
    field = read_descriptor("kernel6_field_iscsi_loop")[0]["measurement"]["kernel"]
    assert p.machine["kernel"] == field["release"]
    assert p.to_dict()["fit"]["training"].startswith("kernel6_field_iscsi_loop")
    for side in hp.SIDES:  # every cost the simulator's host needs, each inside its range
        assert {"wake_s", "proc_s", "send_cpu_s", "gso_cpu_s", "tx_cpu_s"} <= set(p.side(side))
    assert p.provenance["wake_s"].startswith("measured")
    assert Scenario(host=p).server.wake_s == p.host["wake_s"]
    with pytest.raises(ValueError, match="no-such-profile.json"):
        hp.shipped("no-such-profile")


def test_a_wake_up_curve_is_points_each_inside_its_range():
    curve = [[2e-6, 10e-6], [1.28e-3, 24e-6], [40e-3, 61e-6]]
    p = hp.validate(_profile(wake_curve_s=curve))
    assert p.host["wake_curve_s"] == curve and "3 points" in p.describe()
    assert Scenario(host=p).server.wake_curve_s[-1] == (40e-3, 61e-6)
    with pytest.raises(ValueError, match="wake_curve_s must list two or more"):
        hp.validate(_profile(wake_curve_s=[[1e-3, 2e-5]]))
    with pytest.raises(ValueError, match=r"wake_curve_s\[1\] must be in"):
        hp.validate(_profile(wake_curve_s=[[1e-3, 2e-5], [2e-3, 5.0]]))
    with pytest.raises(ValueError, match="with the idle rising"):
        hp.validate(_profile(wake_curve_s=[[2e-3, 2e-5], [1e-3, 3e-5]]))


def test_a_curve_checked_once_is_still_checked_for_what_differs():
    """Host fields' curves are remembered once checked (models.sim.params._CURVES_CHECKED): the
    same curve passes again, but a curve equal to it with a bool in it, one point moved out of
    range, or the same points under a lower bound, are refused as before."""
    from models.sim.params import _CURVES_CHECKED, Spec

    spec = Spec("curve", "seconds", "", high=1.0)
    good = ((1e-3, 2e-5), (2e-3, 3e-5))
    assert spec.check("c", good) == good and (1.0, good) in _CURVES_CHECKED
    assert spec.check("c", good) == good  # from the memo
    edge = ((1e-3, 2e-5), (2e-3, 1.0))
    assert spec.check("c", edge) == edge
    with pytest.raises(ValueError, match="must list"):  # equal to edge, and hashed alike
        spec.check("c", ((1e-3, 2e-5), (2e-3, True)))
    with pytest.raises(ValueError, match="must list"):
        spec.check("c", ((1e-3, 2e-5), (2e-3, 5.0)))
    with pytest.raises(ValueError, match="must list"):
        Spec("curve", "seconds", "", high=1e-5).check("c", good)
    assert spec.check("c", [[1e-3, 2e-5], [2e-3, 3e-5]]) == good  # lists: checked, not kept


def _flag_docs() -> dict[str, str]:
    """Each flag's paragraph in the module's docstring."""
    import re

    doc = hp.__doc__ or ""
    return {
        flag: re.search(rf"``{flag}``\n(.*?)(?=\n``|\n\n)", doc, re.S).group(1)
        for flag in hp.FLAGS
    }


def _setters(flag: str) -> set[str]:
    from models._paths import bundled_data_dir

    return {
        f.stem
        for f in (bundled_data_dir() / "hosts").glob("*.json")
        if json.loads(f.read_text())["host"].get(flag)
    }


@pytest.mark.parametrize("flag", hp.FLAGS)
def test_what_the_docs_say_sets_a_flag_is_what_the_shipped_profiles_set(flag):
    """A flag "set by no shipped profile" is set by none; one "set only by" a variant by it
    alone; otherwise each setter the paragraph names by a name or a ``*`` pattern sets it,
    and every setter is named (the docs once said no shipped profile set ``send_cpu_first``
    while six did)."""
    import re
    from fnmatch import fnmatch

    text = " ".join(_flag_docs()[flag].split())
    setters = _setters(flag)
    if "set by no shipped profile" in text:
        assert not setters, f"{flag}: the docs say none sets it, but {sorted(setters)} do"
        return
    named = re.findall(r"``(kernel6[\w*]*|\*_\w+)``", text)
    assert named, f"{flag}: the docs name no profile that sets it"
    assert all(any(fnmatch(s, n) for n in named) for s in setters), (flag, named, setters)
    assert all(any(fnmatch(s, n) for s in setters) for n in named), (flag, named, setters)
    if "set only by" in text:
        assert setters == set(named), (flag, named, setters)
