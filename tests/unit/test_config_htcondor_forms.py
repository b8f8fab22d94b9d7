"""Config forms HTCondor reads differently from a strict reader (issue 41), values by hand.

Each expected value was worked out from HTCondor's rules (config.cpp next_config_macro and
expand_macro, condor_config.cpp param_integer/param_boolean) and agrees with htcondor2.param
(the same texts are in tests/conformance/config_corpus/macros_left_as_text.conf and
typed_knobs_lenient.conf, compared against the wheel there).
"""

from __future__ import annotations

import pytest

from mockpool.config import ConfigDict, ConfigError, parse_config
from mockpool.config.macroscan import next_macro, replace_dollars, spans
from mockpool.config.typed import Undefined, parse_bool, parse_float, parse_int


def cfg(text: str) -> ConfigDict:
    return parse_config(text, "condor_config")


class TestScanner:
    @pytest.mark.parametrize(
        "text",
        [
            "$(A * 2)",  # a space is not a name character
            "$(A",  # no ")"
            "$(X:a-b)",  # "-" is not allowed in a default
            '$(X:a"b")',
            "$$(A)",  # match-time substitution
            "$NOPE(A)",  # not a macro function
            "$ENV( HOME )",
            "$INT(3",
        ],
    )
    def test_text_that_is_not_a_macro(self, text):
        assert spans(text) == []

    def test_a_default_may_hold_a_macro_and_list_characters(self):
        (span,) = spans("x$(X:$(A) 1,2\\:3)y")
        assert (span.start, span.end, span.name, span.default) == (1, 17, "X", "$(A) 1,2\\:3")

    def test_the_search_goes_on_inside_text_that_is_not_a_macro(self):
        # "$(X:" fails at "-"; the search resumes after "$(" and finds $(A) at 4
        span = next_macro("$(X:$(A)-1)")
        assert (span.start, span.end, span.name) == (4, 8, "A")

    def test_a_function_body_ends_at_the_first_parenthesis(self):
        (span,) = spans("$EVAL(min(3,4))")
        assert (span.func, span.body, span.end) == ("EVAL", "min(3,4", 14)

    def test_dollar_is_passed_over_then_replaced(self):
        assert spans("$(DOLLAR)") == []
        # each $(DOLLAR) becomes "$"; the search resumes at that "$", which with
        # "(DOLLAR)" after it is another $(DOLLAR)
        assert replace_dollars("$(DOLLAR)(DOLLAR) $(dollar)x") == "$ $x"


class TestMacrosLeftAsText:
    def test_unterminated_and_not_a_name(self):
        c = cfg("A = 3\nU = $(A) $(A\nG = x $(A * 2) y\n")
        assert (c["U"], c["G"]) == ("3 $(A", "x $(A * 2) y")

    def test_eval_of_a_macro_cut_at_its_first_parenthesis(self):
        # the argument is "$(A" (text), the rest " * 2)" follows it
        assert cfg("A = 3\nB = $EVAL($(A) * 2)\n")["B"] == "$(A * 2)"

    def test_defaults(self):
        c = cfg(
            "A = 3\nD1 = $(X:a-b)\nD2 = $(X:$(A)-1)\nD3 = $(X:$(Y:$(A)))\n"
            "D4 = $(X:1,2 3)\nD5 = $(X:a:b)\n"
        )
        # D2: "$(X:" is text, $(A) expands inside it; D3: the default "$(Y:$(A)" is put in
        # place and, with the ")" after it, read again: $(Y:$(A)) -> $(A) -> 3
        assert [c[f"D{i}"] for i in range(1, 6)] == ["$(X:a-b)", "$(X:3-1)", "3", "1,2 3", "a:b"]

    def test_the_default_is_used_when_the_raw_value_is_empty(self):
        # E's raw text "$(NOPE)" is not empty, so $(E:d) is E's expansion, ""
        c = cfg("E = $(NOPE)\nF =\nG = <$(E:d)>\nH = $(F:d)\n")
        assert (c["G"], c["H"]) == ("<>", "d")

    def test_a_value_is_read_again_with_the_text_after_it(self):
        # $(OPEN) gives "$(", which with "Q)" after it is $(Q); $(P) gives "$" before "(Q)"
        c = cfg("OPEN = $(\nP = $\nQ = q\nA = $(OPEN)Q)\nB = $(P)(Q)\nC = $(DOLLAR)(Q)\n")
        assert (c["A"], c["B"], c["C"]) == ("q", "q", "$(Q)")

    def test_match_time_text_keeps_its_inner_macros_expanded(self):
        assert cfg("B = 7\nM = $$(A $(B))\n")["M"] == "$$(A 7)"

    def test_env_default_with_other_characters_is_text(self):
        c = ConfigDict(env={}, defaults={})
        c.set("E", "$ENV(NOT_SET:d-e)")
        assert c["E"] == "$ENV(NOT_SET:d-e)"

    def test_eval_that_does_not_parse(self):
        c = cfg("A = 3\nK = $(A) +\nX = <$EVAL(1 +)>\nY = $EVAL(K)\n")
        assert (c["X"], c["Y"]) == ("<>", "3 +")

    def test_a_format_with_no_conversion_is_printed_as_it_is(self):
        # the format is " xx" (after the comma, untrimmed) and takes no argument
        assert cfg("X = a $INT(3, xx) b\n")["X"] == "a  xx b"

    def test_a_real_cycle_is_still_an_error(self):
        with pytest.raises(ConfigError, match="macro cycle: A -> A"):
            cfg("P = $\nA = $(P)(A)\n")["A"]


class TestTypedKnobs:
    @pytest.mark.parametrize(
        ("text", "value"),
        [("true", 1), ("false", 0), ("2 > 1", 1), ("45.9", 45), ("1e3", 1000), ("real(3)", 3)],
    )
    def test_integers(self, text, value):
        assert parse_int(text) == value

    @pytest.mark.parametrize("text", ["Foo", "undefined", "Foo + 1", "yes"])
    def test_undefined_is_not_an_error(self, text):
        with pytest.raises(Undefined):
            parse_int(text)
        with pytest.raises(Undefined):
            parse_float(text)

    @pytest.mark.parametrize("text", ["45s", '"45"', "error", "45 # c", "TRUE junk", "inf"])
    def test_refused(self, text):
        with pytest.raises(ValueError):
            parse_int(text)

    @pytest.mark.parametrize(
        ("text", "value"),
        [("TRUE", True), ("1.5", True), ("0.0", False), ("True || Foo", True), ("3 - 3", False)],
    )
    def test_booleans(self, text, value):
        assert parse_bool(text) is value

    @pytest.mark.parametrize("text", ["yes", "t", "Foo", "TRUE junk", "0x10"])
    def test_booleans_refused(self, text):
        with pytest.raises(ValueError):
            parse_bool(text)

    def test_an_undefined_value_takes_the_knobs_default(self):
        # NEGOTIATOR_INTERVAL's default is 60, CLAIM_WORKLIFE's 1200 (HTCondor's table)
        c = cfg("NEGOTIATOR_INTERVAL = Foo\nCLAIM_WORKLIFE = isUndefined(Foo) + 1\n")
        assert (c.get_int("NEGOTIATOR_INTERVAL"), c.get_int("CLAIM_WORKLIFE")) == (60, 2)

    def test_an_undefined_value_with_no_default_names_its_line(self):
        c = cfg("A = 1\nMY_KNOB = Foo\n")
        assert c.get_int("MY_KNOB", 7) == 7
        with pytest.raises(ConfigError, match=r'^condor_config:2: MY_KNOB = "Foo" is undefined'):
            c.get_int("MY_KNOB")


class TestReleaseDefaults:
    def test_paths_as_a_linux_package_has_them(self):
        # RELEASE_DIR /usr; LOCAL_DIR has no default, so $(LOG) is "/log"
        c = cfg("T = $(LIBEXEC)/t $(LOG)/TLog $(SBIN)\nA = $(SEC_DEFAULT_AUTHENTICATION_METHODS)\n")
        assert c["T"] == "/usr/libexec/t /log/TLog /usr/sbin"
        assert c["A"] == "FS,IDTOKENS,KERBEROS,SCITOKENS,SSL"
