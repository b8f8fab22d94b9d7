"""mockpool.config: HTCondor's configuration language, knob defaults and slot types.

Expected values are worked by hand from HTCondor's manual and source; the macro cases were
also checked against htcondor 25's ``htcondor2.param`` (the ``oracle`` test below repeats
that check when the wheel is installed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockpool.config import (
    DEFAULTS,
    ConfigDict,
    ConfigError,
    SlotTypeSpec,
    load_config,
    parse_config,
    parse_size,
    slot_types,
)
from mockpool.config.constexpr import evaluate_constant
from mockpool.config.units import KIB, MIB

# fmt: off
FRAGMENTS = [  # pieces of configuration syntax for the property test
    "$(", ")", "$$(", "$INT(", "$CHOICE(", "$SUBSTR(", "$ENV(", ":", ",", "=", "(", "\n", "\\\n",
    "#", "if ", "else\n", "endif\n", "use ", "include : ", "@=", "@", "[", "A", "B", "1", "2G",
    "%", "/", "*", "{", '"', "true", "SLOT_TYPE_1", "NUM_SLOTS_TYPE_1", "cpus=", "mem=", "auto",
    "50%", " ", "\x00", "é",
]
# fmt: on


def cfg(text: str, source: str = "condor_config", **kw) -> ConfigDict:
    return parse_config(textwrap.dedent(text), source, **kw)


# --- syntax ---------------------------------------------------------------------------


class TestSyntax:
    def test_assignments_with_and_without_spaces(self):
        c = cfg("A = 1\nB=2\n  C   =   three words  \nD =\n")
        assert (c["A"], c["B"], c["C"], c["D"]) == ("1", "2", "three words", "")

    def test_names_are_case_insensitive(self):
        c = cfg("Negotiator_Interval = 30\nA = 1\nNEGOTIATOR_INTERVAL = 45\n")
        assert c["negotiator_interval"] == "45"
        assert list(c) == ["NEGOTIATOR_INTERVAL", "A"]  # the later definition, in the first place
        assert c.knob("negotiator_INTERVAL").line == 3

    def test_comments_and_blank_lines(self):
        c = cfg("# a comment\n\n   # indented comment\nA = 1 # not a comment\n")
        assert c["A"] == "1 # not a comment"  # '#' only starts a comment at line start
        assert len(c) == 1

    def test_continuation_lines(self):
        c = cfg("START = (KeyboardIdle > 15) && \\\n    (LoadAvg <= 0.3)\nB = 1\\\n2\n")
        assert c["START"] == "(KeyboardIdle > 15) && (LoadAvg <= 0.3)"
        assert c["B"] == "12"
        assert c.knob("B").line == 3  # a knob's line is its first physical line

    def test_comment_inside_continuation(self):
        # htcondor 25: a commented line that itself ends in '\' is dropped and the
        # continuation goes on; a comment line ending in '\' outside one does not continue.
        c = cfg("B = b\nD = d\nA = $(B) \\\n# $(C) \\\n$(D)\n# comment \\\nZ = 3\n")
        assert c["A"] == "b d"
        assert c["Z"] == "3"

    def test_multiline_value(self):
        c = cfg("X @=end\n  [ a = 1;\n    b = 2 ]\n@end\nY = 1\n")
        assert c["X"] == "[ a = 1;\nb = 2 ]"
        assert c["Y"] == "1"

    def test_section_lines_are_ignored(self):
        assert cfg("[HTCondor Settings]\nmy_classad = [ foo=bar ]\n")["my_classad"] == "[ foo=bar ]"

    def test_syntax_error_names_file_and_line(self):
        with pytest.raises(ConfigError, match=r"^condor_config:3: cannot parse 'this is not"):
            cfg("A = 1\n\nthis is not a knob\n")

    def test_bad_knob_name(self):
        with pytest.raises(ConfigError, match=r"condor_config:1"):
            cfg("A-B = 1\n")

    def test_unknown_knobs_are_kept_and_listed(self):
        c = cfg(
            "NEGOTIATOR_INTERVAL = 30\nCOLLECTOR_HOST = cm.example.org\nSLOT_TYPE_3 = 1/4\n"
            "GROUP_QUOTA_group_physics = 10\nSCHEDD.MAX_JOBS_RUNNING = 5\nMY_THING = 1\n"
            "SLOT_TYPE_1_START = Cpus > 1\nMODIFY_REQUEST_EXPR_REQUESTMEMORY = RequestMemory\n"
        )
        assert c["COLLECTOR_HOST"] == "cm.example.org"
        assert c.unknown_knobs() == ["COLLECTOR_HOST", "MY_THING"]

    def test_base_is_copied_not_changed(self):
        base = cfg("A = 1\nB = 2\n")
        top = parse_config("A = 10\nC = $(B)3\n", "local", base)
        assert (top["A"], top["C"], base["A"]) == ("10", "23", "1")
        assert "C" not in base
        assert top.knob("B").source == "condor_config"

    def test_load_config(self, tmp_path):
        path = tmp_path / "condor_config"
        path.write_text("A = 1\nB = 7 oops\n")
        c = load_config(path)
        with pytest.raises(ConfigError, match=rf'^{path}:2: B = "7 oops": expected an integer'):
            c.get_int("B")
        with pytest.raises(ConfigError, match="cannot read"):
            load_config(tmp_path / "missing")


# --- macros ---------------------------------------------------------------------------


class TestMacros:
    def test_lazy_expansion_sees_later_definitions(self):
        c = cfg("A = xxx\nC = $(A)\nA = yyy\n")
        assert c["C"] == "yyy"
        assert c.raw("C") == "$(A)"  # the raw text is kept

    def test_self_reference_is_the_previous_value(self):
        c = cfg("A = xxx\nB = $(A)\nA = $(A)yyy\nA = $(A)zzz\n")
        assert c["A"] == "xxxyyyzzz"
        assert c["B"] == "xxxyyyzzz"

    def test_self_reference_keeps_the_old_value_lazy(self):
        # htcondor 25 gives b2x: the old *raw* text is substituted
        assert cfg("B = b1\nA = $(B)\nA = $(A)x\nB = b2\n")["A"] == "b2x"

    def test_self_reference_to_a_default(self):
        c = cfg("NEGOTIATOR_INTERVAL = $(NEGOTIATOR_INTERVAL) + 1\nX = $(X:dd) y\n")
        assert c["NEGOTIATOR_INTERVAL"] == "60 + 1"
        assert c.get_int("NEGOTIATOR_INTERVAL") == 61
        assert c["X"] == "dd y"

    def test_undefined_is_empty_and_defaults_apply(self):
        c = cfg(
            "MAX_ALLOC = $(NUMCPUS)-1\nM2 = $(NUMCPUS:4)-1\nE =\nH = $(E:dflt)\n"
            "N = $(NUMCPUS:$(TWO))\nTWO = 2\n"
        )
        assert c["MAX_ALLOC"] == "-1"
        assert c["M2"] == "4-1"
        assert c["H"] == "dflt"  # an empty value takes the default too
        assert c["N"] == "2"

    def test_defaults_table_in_macros(self):
        assert cfg("X = $(NEGOTIATOR_INTERVAL)s")["X"] == "60s"

    def test_arithmetic_knob(self):
        c = cfg("MINUTE = 60\nHOUR = (60 * $(MINUTE))\nSHUTDOWN = ($(HOUR)*24)\n")
        assert c["HOUR"] == "(60 * 60)"
        assert c.get_int("SHUTDOWN") == 86400

    def test_function_macros(self):
        c = cfg(
            """
            X = 2
            Y = 6
            XYArea = $(X) * $(Y)
            I = $INT(XYArea)
            I4 = $INT(XYArea,%04d)
            R = $REAL(XYArea)
            R2 = $REAL(Y,%.2f)
            C = $CHOICE(1, a, b, c)
            LIST = p, q, r
            C2 = $CHOICE(2, LIST)
            Name = abcdef
            S1 = $SUBSTR(Name, 2)
            S2 = $SUBSTR(Name, 0, -2)
            S3 = $SUBSTR(Name, 1, 3)
            S4 = $SUBSTR(Name, -1)
            S5 = $SUBSTR(Name, 4, -3)
            D = $(DOLLAR)(X)
            M = a$$(Memory)b
            """
        )
        assert [c[k] for k in ("I", "I4", "R", "R2", "C", "C2")] == [
            "12",
            "0012",
            "12",
            "6.00",
            "b",
            "r",
        ]
        assert [c[k] for k in ("S1", "S2", "S3", "S4", "S5")] == ["cdef", "abcd", "bcd", "f", ""]
        assert c["D"] == "$(X)"  # $(DOLLAR) is not expanded again
        assert c["M"] == "a$$(Memory)b"  # match-time substitution is kept

    def test_env_macro(self):
        c = ConfigDict(env={"HOME": "/home/me"})
        c.set("A", "$ENV(HOME)/x")
        c.set("B", "$ENV(NOT_SET:fallback)")
        c.set("C", "$ENV(NOT_SET)")
        assert (c["A"], c["B"], c["C"]) == ("/home/me/x", "fallback", "UNDEFINED")  # htcondor2

    def test_cycle_is_an_error_not_a_hang(self):
        c = cfg("A = $(B)\nB = $(C)\nC = $(A) x\n")
        with pytest.raises(
            ConfigError, match=r"^condor_config:1: A: macro cycle: A -> B -> C -> A"
        ):
            c["A"]

    def test_doubling_definitions_are_capped(self):
        text = "A0 = xxxxxxxxxxxxxxxx\n" + "".join(
            f"A{i} = $(A{i - 1})$(A{i - 1})\n" for i in range(1, 40)
        )
        with pytest.raises(ConfigError, match="longer than"):
            cfg(text)["A39"]

    def test_unterminated_macro_is_text(self):
        # htcondor2.param: B = "1 $(A" (a "$(" with no ")" is not a macro there)
        assert cfg("A = 1\nB = $(A) $(A\n")["B"] == "1 $(A"

    def test_not_a_macro_name_is_kept(self):
        assert cfg("A = $(bad name) $HOME")["A"] == "$(bad name) $HOME"

    def test_bad_function_use(self):
        with pytest.raises(ConfigError, match=r"\$INT\(X\)"):
            cfg("X = abc\nY = $INT(X)\n")["Y"]
        with pytest.raises(ConfigError, match="out of range"):
            cfg("Y = $CHOICE(5, a, b)\n")["Y"]
        with pytest.raises(ConfigError, match="not supported"):
            cfg("Y = $STRING(a)\n")["Y"]

    def test_subsystem_prefix(self):
        c = cfg("X = base\nSCHEDD.X = $(X) more\nY = $(X)!\n")
        assert c["X"] == "base" and c["Y"] == "base!"
        schedd = c.for_subsystem("SCHEDD")
        assert schedd.lookup("X") == "base more"
        assert schedd.lookup("Y") == "base more!"  # macros resolve for the subsystem too


# --- conditionals, includes, templates ---------------------------------------------------


class TestDirectives:
    def test_if_defined_else(self):
        c = cfg(
            "A = 1\nif defined A\n X = yes\nelse\n X = no\nendif\n"
            "if ! defined NOPE\n Y = 1\nendif\nif defined NOPE\n Z = 1\nelif true\n Z = 2\nendif\n"
        )
        assert (c["X"], c["Y"], c["Z"]) == ("yes", "1", "2")

    def test_if_on_macro_and_version(self):
        c = cfg(
            "ON = True\nif $(ON)\n A = 1\nendif\nif $(OFF)\n B = 1\nendif\n"
            "if version >= 8.2\n V = new\nelse\n V = old\nendif\n"
        )
        assert c["A"] == "1" and "B" not in c and c["V"] == "new"

    def test_nested_if_in_false_branch(self):
        c = cfg("if false\n if true\n A = 1\n endif\n B = 1\nelse\n C = 1\nendif\n")
        assert list(c) == ["C"]

    def test_unbalanced_if(self):
        with pytest.raises(ConfigError, match="without 'endif'"):
            cfg("if true\nA = 1\n")
        with pytest.raises(ConfigError, match=r"condor_config:1: 'endif' without 'if'"):
            cfg("endif\n")

    def test_error_and_warning(self):
        c = cfg("warning : check this\n")
        assert c.warnings == ["condor_config:1: warning: check this"]
        with pytest.raises(ConfigError, match=r"^condor_config:2: error: stuff is needed"):
            cfg("if ! defined stuff\nerror : stuff is needed!\nendif\n")

    def test_slot_templates(self):
        c = cfg("use FEATURE : PartitionableSlot\n")
        assert (c["NUM_SLOTS_TYPE_1"], c["SLOT_TYPE_1"], c["SLOT_TYPE_1_PARTITIONABLE"]) == (
            "1",
            "100%",
            "true",
        )
        c = cfg("use feature : StaticSlots(2, 4, cpus=1, mem=2G)\n")
        assert (c["NUM_SLOTS_TYPE_2"], c["SLOT_TYPE_2"]) == ("4", "cpus=1, mem=2G")

    def test_knob_named_like_a_keyword(self):
        c = cfg("ERROR = 5\nuse = 3\nIFA = 1\n")
        assert (c["ERROR"], c["use"], c["IFA"]) == ("5", "3", "1")

    def test_include(self, tmp_path):
        (tmp_path / "local").write_text("B = 2\nA = $(A)+1\n")
        main = tmp_path / "condor_config"
        main.write_text("A = 1\ninclude : local\ninclude ifexist : nothing_here\nC = $(B)\n")
        c = load_config(main)
        assert (c["A"], c["C"]) == ("1+1", "2")
        assert c.knob("B").source == str(tmp_path / "local")
        with pytest.raises(ConfigError, match="not commands"):
            cfg("include : /bin/make_config |\n")


# --- typed accessors and defaults ---------------------------------------------------------


class TestAccessors:
    def test_defaults_table(self):
        c = ConfigDict()
        assert c.get_int("NEGOTIATOR_INTERVAL") == 60
        assert c.get_int("NEGOTIATOR_MIN_INTERVAL") == 5
        assert c.get_int("NEGOTIATOR_CYCLE_DELAY") == 20
        assert c.get_int("CLASSAD_LIFETIME") == 900
        assert c.get_int("UPDATE_INTERVAL") == 300
        assert c.get_int("CLAIM_WORKLIFE") == 1200
        assert c.get_int("ALIVE_INTERVAL") == 300
        assert c.get_int("MAX_CLAIM_ALIVES_MISSED") == 6
        assert c.get_int("MATCH_TIMEOUT") == 120
        assert c.get_int("PRIORITY_HALFLIFE") == 86400
        assert c.get_float("DEFAULT_PRIO_FACTOR") == 1000.0
        assert c.get_float("NICE_USER_PRIO_FACTOR") == 1e10
        assert c.get_expr("SLOT_WEIGHT") == "Cpus"
        assert c.get_bool("NEGOTIATOR_USE_SLOT_WEIGHTS") is True
        assert c.get_bool("PREEMPTION_REQUIREMENTS") is False
        assert c.get_int("MAX_JOBS_RUNNING") == 10000
        assert c.get_expr("NEGOTIATOR_PRE_JOB_RANK").startswith("(10000000 * My.Rank)")
        assert c.get_list("GROUP_NAMES") == []
        assert len(c) == 0 and "NEGOTIATOR_INTERVAL" not in c  # defaults are not knobs

    def test_table_default_wins_over_the_callers(self):
        # as param_integer: a knob in the param table ignores the hard-coded default
        assert ConfigDict().get_int("NEGOTIATOR_INTERVAL", 5) == 60
        assert ConfigDict().get_int("NOT_A_KNOB", 5) == 5
        with pytest.raises(ConfigError, match="NOT_A_KNOB is not set and has no default"):
            ConfigDict().get_int("NOT_A_KNOB")

    def test_empty_value_means_unset(self):
        c = cfg("NEGOTIATOR_INTERVAL =\nX =\n")
        assert c.get_int("NEGOTIATOR_INTERVAL") == 60
        assert c.get_int("X", 7) == 7
        assert c.get_str("X", "d") == "d"

    def test_get_int(self):
        c = cfg("A = 42\nB = -3\nC = 7 / 2\nD = 2.9\nE = (1 + 2) * 3 % 5\n")
        assert [c.get_int(k) for k in "ABCDE"] == [42, -3, 3, 2, 4]

    def test_get_float(self):
        c = cfg("A = 0.5\nB = 1e-3\nC = 3\nD = 1/4.0\n")
        assert [c.get_float(k) for k in "ABCD"] == [0.5, 0.001, 3.0, 0.25]

    @pytest.mark.parametrize(
        ("text", "value"),
        [
            ("True", True),
            ("false", False),
            ("TRUE", True),
            ("FaLsE", False),
            ("1", True),
            ("0", False),
            ("2 > 1", True),
            ("(1 == 2) || false", False),
        ],
    )
    def test_get_bool(self, text, value):
        assert cfg(f"B = {text}\n").get_bool("B") is value

    @pytest.mark.parametrize("text", ["yes", "no", "T", "f", "on"])
    def test_htcondor_refuses_other_boolean_words(self, text):
        # param_boolean takes only true/false/1/0 or an expression; a daemon stops on "no"
        with pytest.raises(ConfigError, match=r"condor_config:1: B = .*expected a boolean"):
            cfg(f"B = {text}\n").get_bool("B")

    def test_get_list(self):
        c = cfg("GROUP_NAMES = group_physics, group_chemistry,group_bio  group_x\n")
        assert c.get_list("GROUP_NAMES") == [
            "group_physics",
            "group_chemistry",
            "group_bio",
            "group_x",
        ]
        assert c.get_list("NOPE", ["a"]) == ["a"]

    def test_get_size(self):
        c = cfg("M1 = 4096\nM2 = 4G\nM3 = 4 GB\nM4 = 1500K\nM5 = 2 * 1024\nD1 = 1G\nD2 = 100\n")
        assert [c.get_size_mb(k) for k in ("M1", "M2", "M3", "M4", "M5")] == [
            4096,
            4096,
            4096,
            2,
            2048,
        ]
        assert (c.get_size_kb("D1"), c.get_size_kb("D2")) == (1048576, 100)

    def test_get_expr_with_validator(self):
        def no_semicolons(text: str) -> None:
            if ";" in text:
                raise ValueError("unexpected ';'")

        c = cfg("START = Memory > 1024\nRANK = a;b\n")
        assert c.get_expr("START", validate=no_semicolons) == "Memory > 1024"
        with pytest.raises(ConfigError, match=r'^condor_config:2: RANK = "a;b": unexpected \';\''):
            c.get_expr("RANK", validate=no_semicolons)

    @pytest.mark.parametrize(
        ("accessor", "text", "problem"),
        [
            ("get_int", "45s", "expected an integer"),
            ("get_int", "1.5.2", "expected an integer"),
            ("get_float", "very fast", "expected a number"),
            ("get_bool", "maybe", "expected a boolean"),
            ("get_size_mb", "lots", "expected a size in MB"),
        ],
    )
    def test_bad_values_name_file_line_knob(self, accessor, text, problem):
        c = cfg(f"# header\n\n\n\n\n\n\n\n\n\n\nNEGOTIATOR_INTERVAL = {text}\n")
        with pytest.raises(ConfigError) as info:
            getattr(c, accessor)("NEGOTIATOR_INTERVAL")
        assert str(info.value) == f'condor_config:12: NEGOTIATOR_INTERVAL = "{text}": {problem}' + (
            " (True or False)"
            if accessor == "get_bool"
            else " such as 4096 or 4G"
            if accessor == "get_size_mb"
            else ""
        )

    def test_set_and_update(self):
        c = ConfigDict()
        c.update({"NEGOTIATOR_INTERVAL": 30, "GROUP_ACCEPT_SURPLUS": True}, source="pool.toml")
        assert c.get_int("NEGOTIATOR_INTERVAL") == 30 and c.get_bool("GROUP_ACCEPT_SURPLUS") is True
        assert c.knob("NEGOTIATOR_INTERVAL").where == "pool.toml"

    def test_every_default_is_readable(self):
        from mockpool.classad import parse_expr

        c = ConfigDict()
        lists = {
            "SEC_DEFAULT_AUTHENTICATION_METHODS",
            "DAEMON_LIST",
            "SYSTEM_JOB_MACHINE_ATTRS",
            *("RELEASE_DIR", "BIN", "SBIN", "LIB", "LIBEXEC", "LOG", "SPOOL", "EXECUTE"),
            *("COLLECTOR", "GPU_MONITOR"),
        }  # lists and paths, not expressions
        for name in DEFAULTS:
            assert c.lookup(name) is not None
            if name not in lists:
                c.get_expr(name, validate=parse_expr)  # a valid ClassAd expression


class TestHelpers:
    @pytest.mark.parametrize(
        ("text", "unit", "value"),
        [
            ("2GB", MIB, 2048),
            ("1G", KIB, 1048576),
            ("512", MIB, 512),
            ("1500K", MIB, 2),
            ("1.5G", MIB, 1536),
            ("2 gb", MIB, 2048),
            ("1T", MIB, 1048576),
            ("10", KIB, 10),
            ("lots", MIB, None),
            ("-5", MIB, None),
            ("5B", MIB, None),
            ("", MIB, None),
        ],
    )
    def test_parse_size(self, text, unit, value):
        assert parse_size(text, unit) == value

    @pytest.mark.parametrize(
        ("text", "value"),
        [
            ("7 / 2", 3),
            ("-7 / 2", -3),
            ("-7 % 3", -1),
            ("7.0 / 2", 3.5),
            ("1 + 2 * 3", 7),
            ("(1 + 2) * 3", 9),
            ("MIN({3, 1, 2})", 1),
            ("max(4, 9)", 9),
            ("ifThenElse(1 > 2, 5, 6)", 6),
            ("true && !false", True),
            ("2 >= 2 ? 10 : 20", 10),
            ("ceiling(2.1)", 3),
            ("int(-2.7)", -2),
        ],
    )
    def test_constant_expressions(self, text, value):
        assert evaluate_constant(text) == value

    @pytest.mark.parametrize("text", ["Memory > 3", '"str"', "1 +", "1 / 0", "foo(1)", ""])
    def test_not_constant(self, text):
        with pytest.raises(ValueError):
            evaluate_constant(text)


# --- slot types -------------------------------------------------------------------------


def slots(text: str, cpus: int = 10, memory: int = 20000, disk: int = 100000) -> list[SlotTypeSpec]:
    return slot_types(cfg(text), cpus, memory, disk)


class TestSlotTypes:
    def test_one_partitionable_slot_of_everything(self):
        assert slots(
            "SLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = True\nNUM_SLOTS_TYPE_1 = 1\n"
        ) == [SlotTypeSpec(1, 1, True, 10, 20000, 100000)]

    def test_default_is_one_partitionable_slot(self):
        # HTCondor >= 23.0 (countTypes: SLOT_TYPE_0_PARTITIONABLE defaults to true)
        assert slots("") == [SlotTypeSpec(0, 1, True, 10, 20000, 100000)]
        # SLOT_TYPE_1 without NUM_SLOTS_TYPE_1 has no effect, as in HTCondor
        assert slots("SLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = True\n") == [
            SlotTypeSpec(0, 1, True, 10, 20000, 100000)
        ]

    def test_static_default_is_one_slot_per_cpu(self):
        assert slots("SLOT_TYPE_0_PARTITIONABLE = False\n") == [
            SlotTypeSpec(0, 10, False, 1, 2000, 10000)
        ]
        # NUM_SLOTS = 4: each gets an even share; 10/4 cpus round down to 2
        assert slots("SLOT_TYPE_0_PARTITIONABLE = False\nNUM_SLOTS = 4\n") == [
            SlotTypeSpec(0, 4, False, 2, 5000, 25000)
        ]

    def test_num_slots_beyond_cpus(self):
        with pytest.raises(
            ConfigError, match=r"condor_config:2: NUM_SLOTS: 11 slots share the remaining 10 cpus"
        ):
            slots("SLOT_TYPE_0_PARTITIONABLE = False\nNUM_SLOTS = 11\n")

    def test_fixed_type_plus_remainder(self):
        # type 1: 2 static slots of 2 cpus and 25% of 20000 MB; disk is auto.
        # type 2: 1 p-slot with the rest: 10 - 4 = 6 cpus, 20000 - 10000 = 10000 MB;
        # disk: all 3 slots are auto, 100000 // 3 = 33333 KB each.
        got = slots(
            """
            SLOT_TYPE_1 = cpus=2, memory=25%
            NUM_SLOTS_TYPE_1 = 2
            NUM_SLOTS_TYPE_2 = 1
            SLOT_TYPE_2_PARTITIONABLE = TRUE
            """
        )
        assert got == [
            SlotTypeSpec(1, 2, False, 2, 5000, 33333),
            SlotTypeSpec(2, 1, True, 6, 10000, 33333),
        ]

    def test_space_separated_list_and_units(self):
        # no commas: whitespace separates items; 4G of memory is 4096 MB
        assert slots("SLOT_TYPE_1 = cpus=2 mem=4G\nNUM_SLOTS_TYPE_1 = 3\n") == [
            SlotTypeSpec(1, 3, False, 2, 4096, 33333)
        ]

    def test_manual_equivalent_forms(self):
        # the manual: on a 4-core, 256 MB machine these are all the same slot
        for text in (
            "cpus=2, ram=128, disk=1/2",
            "cpus=1/2, memory=128, disk=50%",
            "c=1/2, m=50%, disk=1/2",
        ):
            assert slots(f"SLOT_TYPE_1 = {text}\nNUM_SLOTS_TYPE_1 = 1\n", 4, 256, 100000) == [
                SlotTypeSpec(1, 1, False, 2, 128, 50000)
            ]
        for text in ("c=25%, m=64, d=25%", "25%", "1/4"):
            assert slots(f"SLOT_TYPE_1 = {text}\nNUM_SLOTS_TYPE_1 = 1\n", 4, 256, 100000) == [
                SlotTypeSpec(1, 1, False, 1, 64, 25000)
            ]

    def test_blanket_share_and_auto(self):
        # "cpus=1, disk=auto, 50%": one core, half the memory, disk auto (all of it)
        assert slots("SLOT_TYPE_1 = cpus=1, disk=auto, 50%\nNUM_SLOTS_TYPE_1 = 1\n") == [
            SlotTypeSpec(1, 1, False, 1, 10000, 100000)
        ]

    def test_mem_auto_divides_evenly(self):
        assert slots("SLOT_TYPE_1 = cpus=1, mem=auto\nNUM_SLOTS_TYPE_1 = 2\n", 4, 128, 1000) == [
            SlotTypeSpec(1, 2, False, 1, 64, 500)
        ]

    def test_num_cpus_memory_disk_override_detected(self):
        got = slots("NUM_CPUS = 16\nMEMORY = 64G\nRESERVED_MEMORY = 1024\nDISK = 1000000\n")
        assert got == [SlotTypeSpec(0, 1, True, 16, 65536 - 1024, 1000000)]
        assert slots("NUM_CPUS = $(DETECTED_CPUS) * 2\n")[0].cpus == 20

    def test_partitionable_template(self):
        assert slots("use FEATURE : PartitionableSlot(1, cpus=4, mem=8G)\n") == [
            SlotTypeSpec(1, 1, True, 4, 8192, 100000)
        ]
        assert slots("use FEATURE : StaticSlots\n") == [SlotTypeSpec(1, 10, False, 1, 2000, 10000)]

    def test_overcommit_is_an_error(self):
        with pytest.raises(
            ConfigError,
            match=r'^condor_config:1: SLOT_TYPE_1 = "cpus=4": the slot types ask for 12 cpus but the machine has 10$',
        ):
            slots("SLOT_TYPE_1 = cpus=4\nNUM_SLOTS_TYPE_1 = 3\n")
        with pytest.raises(
            ConfigError, match="ask for 25000 MB of memory but the machine has 20000"
        ):
            slots("SLOT_TYPE_1 = 1/4\nNUM_SLOTS_TYPE_1 = 5\n")
        with pytest.raises(ConfigError, match="KB of disk"):
            slots(
                "SLOT_TYPE_1 = disk=60%\nNUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_2 = disk=50%\nNUM_SLOTS_TYPE_2 = 1\n"
            )

    @pytest.mark.parametrize(
        ("definition", "problem"),
        [
            ("2", "give a percentage"),
            ("150%", "give a percentage"),
            ("cpus=lots", "not a percentage"),
            ("gpus=1", "unknown resource 'gpus'"),
            ("cpus=1/0", "divides by zero"),
            ("cpus=2G", "no unit"),
        ],
    )
    def test_bad_slot_type(self, definition, problem):
        with pytest.raises(
            ConfigError, match=rf'^condor_config:1: SLOT_TYPE_1 = "{definition}": .*{problem}'
        ):
            slots(f"SLOT_TYPE_1 = {definition}\nNUM_SLOTS_TYPE_1 = 1\n")

    def test_unknown_resource_share_is_ignored(self):
        assert slots("SLOT_TYPE_1 = gpus=50%, 100%\nNUM_SLOTS_TYPE_1 = 1\n") == [
            SlotTypeSpec(1, 1, False, 10, 20000, 100000)
        ]

    def test_type_beyond_max_slot_types(self):
        with pytest.raises(ConfigError, match="beyond MAX_SLOT_TYPES"):
            slots("NUM_SLOTS_TYPE_11 = 1\n")


# --- the oracle: htcondor 25's own configuration reader ------------------------------------

ORACLE_CONFIG = """\
A = xxx
B = $(A)
A = $(A)yyy
a = $(A)zzz
MINUTE = 60
HOUR = (60 * $(MINUTE))
D = $(UNDEF:4)-1
E = $INT(HOUR)
F = $CHOICE(1, a, b, c)
G = $REAL(HOUR)
N = $(NEGOTIATOR_INTERVAL)
EMPTY =
H = $(EMPTY:dflt)
S = $SUBSTR(A, 1, 3)
C1 = $(B) \\
# $(C) \\
  tail
X = 1 \\
    2
use FEATURE : PartitionableSlot
MULTI @=end
  line1
  line2
@end
if defined A
  IFA = yes
else
  IFA = no
endif
"""
ORACLE_KNOBS = (
    "A B HOUR D E F G N H S C1 X NUM_SLOTS_TYPE_1 SLOT_TYPE_1 SLOT_TYPE_1_PARTITIONABLE MULTI IFA"
)


@pytest.mark.oracle
def test_expansion_agrees_with_htcondor(tmp_path):
    pytest.importorskip("htcondor2")
    path = tmp_path / "condor_config"
    path.write_text(ORACLE_CONFIG)
    script = (
        "import json, htcondor2\n"
        f"print(json.dumps({{k: htcondor2.param.get(k) for k in {ORACLE_KNOBS.split()!r}}}))\n"
    )
    env = {**os.environ, "CONDOR_CONFIG": str(path)}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    if out.returncode != 0:
        pytest.skip(f"htcondor2 could not run: {out.stderr[-200:]}")
    theirs = json.loads(out.stdout.strip().splitlines()[-1])
    ours = parse_config(ORACLE_CONFIG)
    assert {k: ours.lookup(k) for k in ORACLE_KNOBS.split()} == theirs


# --- robustness -------------------------------------------------------------------------


class TestRobustness:
    def test_deep_nesting_is_an_error(self):
        with pytest.raises(ValueError, match="nested too deeply"):
            evaluate_constant("(" * 3000 + "1" + ")" * 3000)
        chain = "".join(f"A{i} = $(A{i + 1})\n" for i in range(500)) + "A500 = end\n"
        with pytest.raises(ConfigError, match="macros nested more than"):
            cfg(chain)["A0"]
        short = "".join(f"A{i} = $(A{i + 1})\n" for i in range(50)) + "A50 = end\n"
        assert cfg(short)["A0"] == "end"

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join))
    def test_any_text_is_parsed_or_refused_with_config_error(self, text):
        try:
            c = parse_config(text)
            for name in list(c)[:5]:
                c.lookup(name)
                c.get_int(name, 0)
            slot_types(c, 8, 16000, 100000)
        except ConfigError:
            pass


def test_a_value_read_before_a_knob_changes_is_read_again_after() -> None:
    # values are memoized per view; any set on the shared knobs must be seen by every view
    cfg = ConfigDict()
    view = cfg.for_subsystem("SCHEDD")
    assert cfg.get_int("ALIVE_INTERVAL") == 300 and view.get_int("ALIVE_INTERVAL") == 300
    cfg.set("BASE", "10")
    cfg.set("ALIVE_INTERVAL", "$(BASE) * 2")
    assert cfg.get_int("ALIVE_INTERVAL") == 20 and view.get_int("ALIVE_INTERVAL") == 20
    cfg.set("BASE", "30")  # a knob the value is expanded from
    assert cfg.get_int("ALIVE_INTERVAL") == 60
    cfg.set("SCHEDD.ALIVE_INTERVAL", "45")
    assert view.get_int("ALIVE_INTERVAL") == 45 and cfg.get_int("ALIVE_INTERVAL") == 60
    copy = cfg.copy()
    copy.set("ALIVE_INTERVAL", "7")
    assert copy.get_int("ALIVE_INTERVAL") == 7 and cfg.get_int("ALIVE_INTERVAL") == 60
