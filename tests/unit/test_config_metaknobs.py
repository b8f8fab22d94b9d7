"""Metaknobs (``use ROLE/FEATURE/POLICY/SECURITY``), the new function macros and the spec's
config text. Expected values are worked by hand from HTCondor's param table
(param_info.in) and config.cpp; tests/conformance/test_config_oracle.py checks the same
rules against htcondor2.param."""

from __future__ import annotations

import textwrap

import pytest

from mockpool.config import ConfigError, parse_config
from mockpool.config.metaknobs import expand_args, template
from mockpool.pool.spec import parse_spec
from mockpool.pool.specmodel import SpecError


def cfg(text: str, **kw):
    return parse_config(textwrap.dedent(text), "condor_config", **kw)


class TestMetaArguments:
    def test_positional_and_defaults(self):
        assert expand_args("$(1)|$(2)|$(3:x)", "a, b") == "a|b|x"
        assert expand_args("$(1:1)", "") == "1"

    def test_empty_items_are_skipped(self):
        # Knob(a, , c): HTCondor's tokenizer drops the empty item, so c is the 2nd argument
        assert expand_args("$(2)", "a, , c") == "c"
        assert expand_args("$(0#)", "a, , c") == "2"

    def test_presence_count_and_rest(self):
        assert expand_args("$(1?)$(2?)$(3?)", "a, b") == "110"
        assert expand_args("$(0)", " a, b ") == "a, b"
        assert expand_args("$(2+)", "1, cpus=4, 50%") == "cpus=4, 50%"
        assert expand_args("$(2+:100%)", "1") == "100%"

    def test_nested_argument_in_a_macro_name(self):
        assert expand_args("$($(1))", "TRIGGER") == "$(TRIGGER)"


class TestTemplates:
    def test_roles_append_to_daemon_list(self):
        c = cfg("use ROLE : CentralManager\nuse ROLE : Submit, Execute\n")
        assert c.lookup("DAEMON_LIST") == "MASTER COLLECTOR NEGOTIATOR SCHEDD STARTD"

    def test_names_and_categories_are_case_insensitive(self):
        assert template("feature", "partitionableslot") == template("FEATURE", "PartitionableSlot")

    def test_partitionable_slot_with_arguments(self):
        c = cfg("use FEATURE : PartitionableSlot(2, cpus=4, 50%)\n")
        assert (c["NUM_SLOTS_TYPE_2"], c["SLOT_TYPE_2_PARTITIONABLE"], c["SLOT_TYPE_2"]) == (
            "1",
            "true",
            "cpus=4, 50%",
        )

    def test_always_run_jobs(self):
        c = cfg("use POLICY : ALWAYS_RUN_JOBS\n")
        assert c.get_bool("NEGOTIATOR_CONSIDER_PREEMPTION") is False
        assert c.get_int("MaxJobRetirementTime") == 2147483647
        assert c.get_int("CLAIM_WORKLIFE") == 1200

    def test_limit_job_runtimes_default_and_argument(self):
        c = cfg("use POLICY : LIMIT_JOB_RUNTIMES\n")
        assert c.lookup("MAX_JOB_RUNTIME") == "24*3600"
        assert c.get_int("MaxJobRetirementTime") == 86520  # 24*3600 + 120
        c = cfg("use POLICY : Limit_Job_Runtimes(600)\n")
        assert c.lookup("PREEMPT") == (
            '(Activity == "Busy") && ((time() - EnteredCurrentActivity) > 600)'
        )

    def test_preempt_if_with_no_prior_preempt_uses_the_default(self):
        # PREEMPT's table default is False, so "defined PREEMPT" holds: X || False
        c = cfg("T = (Memory > 2)\nuse POLICY : PREEMPT_IF(T)\n")
        assert c.lookup("PREEMPT") == "(Memory > 2) || False"
        assert c.lookup("MAXJOBRETIREMENTTIME") == "ifthenelse((Memory > 2),-1,0)"
        assert c.lookup("WANT_SUSPEND") == "(Memory > 2) =!= true && False"

    def test_self_reference_to_a_default(self):
        c = cfg('START = $(START) && (Arch == "X86_64")\nSTARTD_ATTRS = $(STARTD_ATTRS) A\n')
        assert c.lookup("START") == 'True && (Arch == "X86_64")'
        assert c.lookup("STARTD_ATTRS") == " A"  # HTCondor keeps the space

    def test_desktop_expands_its_fragments_and_defaults(self):
        c = cfg("use POLICY : Desktop\n")
        assert c.lookup("KeyboardBusy") == "(KeyboardIdle < 60)"
        assert c.lookup("CONTINUE") == (
            "(((LoadAvg - CondorLoadAvg) <= 0.3) && ((time() - EnteredCurrentActivity) > 10)"
            " && (KeyboardIdle > 5 * 60))"
        )
        assert c.lookup("STARTD_LATCH_EXPRS").strip() == "CpuBusy"

    def test_desktop_hours_uses_int_of_fractional_minutes(self):
        c = cfg("use POLICY : Desktop_Hours(9, 17)\n")
        # 9*60 - 29.5 = 510.5 -> 510; 17*60 + 0.5 = 1020.5 -> 1020
        assert c.lookup("START") == "(ClockMin < 510 || ClockMin > 1020)"

    def test_hold_if_memory_exceeded(self):
        c = cfg("use POLICY : HOLD_IF_MEMORY_EXCEEDED\n")
        assert c.lookup("WANT_HOLD_SUBCODE") == (
            "ifThenElse((JobUniverse != 13 && MemoryUsage =!= UNDEFINED && MemoryUsage > Memory),"
            " 102 , UNDEFINED)"
        )

    def test_security_is_kept_with_a_note(self):
        c = cfg("use SECURITY : recommended_v9_0\n")
        assert c.lookup("SEC_DEFAULT_ENCRYPTION") == "required"
        assert c.lookup("ALLOW_WRITE") == "*"
        assert any("pool tokens" in w for w in c.warnings)

    def test_knobs_carry_the_use_line(self):
        c = cfg("A = 1\nuse ROLE : Execute\n")
        assert c.knob("DAEMON_LIST").where == "condor_config:2"


class TestBadInput:
    def test_unknown_template(self):
        with pytest.raises(ConfigError, match=r"^condor_config:2: use POLICY : NoSuch: HTCondor"):
            cfg("A = 1\nuse POLICY : NoSuch\n")

    def test_unknown_category(self):
        with pytest.raises(ConfigError, match=r"^condor_config:1: use FLAVOUR : X"):
            cfg("use FLAVOUR : X\n")

    def test_template_error_directive(self):
        with pytest.raises(
            ConfigError, match=r"condor_config:1: use POLICY : PREEMPT_IF: .*requires"
        ):
            cfg("use POLICY : PREEMPT_IF\n")

    def test_eval_that_does_not_parse(self):
        # htcondor2.param: nothing, or the expanded text when the argument held a macro
        c = cfg("A = 3\nB = $(A) +\nX = <$EVAL(1 +)>\nY = $EVAL(B)\nZ = $EVAL($(A) +)\n")
        # Z's argument ends at the first ")": "$(A", text, then " +)"
        assert (c["X"], c["Y"], c["Z"]) == ("<>", "3 +", "$(A +)")

    def test_eval_argument_ends_at_first_parenthesis(self):
        # htcondor2.param: "min(3,4" does not parse (nothing), then the stray ")"
        assert cfg("X = $EVAL(min(3,4))\n")["X"] == ")"

    def test_random_integer_bad_range(self):
        with pytest.raises(ConfigError, match="min > max"):
            cfg("X = $RANDOM_INTEGER(5, 1)\n")["X"]


class TestFunctionMacros:
    def test_eval(self):
        c = cfg('E = 2 * 3 + 1\nX = $EVAL(E)\nS = $EVAL("a")\nU = $EVAL(nothing)\nZ = $EVAL(1/0)\n')
        assert (c["X"], c["S"], c["U"], c["Z"]) == ("7", "a", "undefined", "error")

    def test_random_is_seeded_and_stable(self):
        text = "R = $RANDOM_INTEGER(1, 1000)\nC = $RANDOM_CHOICE(a, b, c, d, e)\n"
        from mockpool.config import ConfigDict

        one = parse_config(text, base=ConfigDict(seed=1))
        again = parse_config(text, base=ConfigDict(seed=1))
        assert (one["R"], one["C"]) == (again["R"], again["C"])
        assert one["R"] == one["R"]  # a lookup does not draw again
        assert 1 <= int(one["R"]) <= 1000 and one["C"] in "abcde"
        draws = {parse_config(text, base=ConfigDict(seed=s))["R"] for s in range(20)}
        assert len(draws) > 10  # the seed matters

    def test_random_integer_step(self):
        from mockpool.config import ConfigDict

        for s in range(20):
            v = int(parse_config("R = $RANDOM_INTEGER(10, 20, 5)\n", base=ConfigDict(seed=s))["R"])
            assert v in (10, 15, 20)

    def test_random_choice_of_a_list_knob(self):
        c = cfg("L = x, y\nC = $RANDOM_CHOICE(L)\n")
        assert c["C"] in ("x", "y")


SPEC = '''
[pool]
seed = 4

[config]
text = """
use POLICY : ALWAYS_RUN_JOBS
GROUP_NAMES = group_physics, group_physics.hep
GROUP_QUOTA_group_physics = 20
GROUP_QUOTA_group_physics.hep = 15
GROUP_ACCEPT_SURPLUS = True
"""
NEGOTIATOR_INTERVAL = 30

[[startds]]
count = 1
[startds.config]
text = """
use ROLE : Execute
use FEATURE : PartitionableSlot
NUM_CPUS = 8
"""
MEMORY = 16384
'''


class TestSpecText:
    def test_text_block_with_dotted_names_and_booleans(self):
        spec = parse_spec(SPEC, "pool.toml")
        assert spec.config.get_int("GROUP_QUOTA_group_physics.hep") == 15
        assert spec.config.get_bool("GROUP_ACCEPT_SURPLUS") is True
        assert spec.config.get_bool("NEGOTIATOR_CONSIDER_PREEMPTION") is False
        assert spec.config.get_int("NEGOTIATOR_INTERVAL") == 30
        assert spec.config.seed == 4
        machine = spec.startds[0].config
        assert machine.lookup("DAEMON_LIST") == "MASTER STARTD"
        assert (machine.get_int("NUM_CPUS"), machine.get_int("MEMORY")) == (8, 16384)

    def test_text_errors_keep_the_spec_line(self):
        bad = SPEC.replace("use ROLE : Execute", "use ROLE : Worker")
        line = bad.splitlines().index("use ROLE : Worker") + 1
        with pytest.raises(SpecError, match=rf"^pool.toml:{line}: use ROLE : Worker"):
            parse_spec(bad, "pool.toml")

    def test_dotted_toml_key_is_explained(self):
        with pytest.raises(SpecError, match="text ="):
            parse_spec("[config]\nGROUP_QUOTA_group_physics.hep = 15\n", "pool.toml")


class TestLocalConfig:
    def test_dir_then_files_then_a_changed_dir(self, tmp_path):
        d = tmp_path / "config.d"
        d.mkdir()
        (d / "20-b.conf").write_text("ORDER = $(ORDER) d20\n")
        (d / "10-a.conf").write_text("ORDER = $(ORDER) d10\n")
        (d / "10-a.conf~").write_text("ORDER = skipped\n")  # the default exclude pattern
        (d / ".hidden").write_text("ORDER = skipped\n")
        (tmp_path / "one.conf").write_text("ORDER = $(ORDER) one\nLOCAL_CONFIG_FILE = two.conf\n")
        (tmp_path / "two.conf").write_text("ORDER = $(ORDER) two\nLOCAL_CONFIG_DIR = more.d\n")
        (tmp_path / "more.d").mkdir()
        (tmp_path / "more.d" / "x").write_text("ORDER = $(ORDER) more\n")
        top = tmp_path / "condor_config"
        top.write_text("ORDER = top\nLOCAL_CONFIG_DIR = config.d\nLOCAL_CONFIG_FILE = one.conf\n")
        from mockpool.config import load_config

        # dir (d10, d20), then one.conf, whose new list (two.conf) replaces the old one,
        # then two.conf changed LOCAL_CONFIG_DIR, so that folder is read last
        assert load_config(top)["ORDER"] == "top d10 d20 one two more"

    def test_missing_local_file_is_an_error(self, tmp_path):
        top = tmp_path / "condor_config"
        top.write_text("LOCAL_CONFIG_FILE = /nonexistent/local.conf\n")
        from mockpool.config import load_config

        with pytest.raises(
            ConfigError, match=r"condor_config:1: LOCAL_CONFIG_FILE: .* does not exist"
        ):
            load_config(top)
        top.write_text("REQUIRE_LOCAL_CONFIG_FILE = False\nLOCAL_CONFIG_FILE = /nonexistent/x\n")
        assert load_config(top)["LOCAL_CONFIG_FILE"] == "/nonexistent/x"


class TestPlusEquals:
    def test_append_with_separators(self):
        c = cfg("A = x\nA += y\nB += z\nC = p\nC +,= q\nD = p\nD +&&= q\n")
        # a space alone, the separator alone, or a doubled one with spaces; unset: just the value
        assert (c["A"], c["B"], c["C"], c["D"]) == ("x y", "z", "p,q", "p && q")

    def test_append_to_a_default(self):
        c = cfg("START += && (Memory > 1024)\nSTARTD_ATTRS += HasFoo\n")
        assert c["START"] == "True && (Memory > 1024)"
        assert c["STARTD_ATTRS"] == "HasFoo"  # an empty default: just the value
