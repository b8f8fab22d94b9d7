"""mockpool.schedd.submit: submit descriptions into job ads.

Expected values are worked by hand from condor_submit's manual and submit_utils.cpp; the
item splitting of ``queue ... from`` was checked against htcondor 25's ``Submit.itemdata``.
"""

from __future__ import annotations

import contextlib
import os
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockpool.schedd.submit import (
    MAX_JOBS_PER_SUBMISSION,
    SubmitError,
    parse_submit,
    submit_inputs,
)
from mockpool.schedd.submit_values import quote

# fmt: off
FRAGMENTS = [  # pieces of submit syntax for the property test
    "$(", ")", "$$(", "$INT(", ":", ",", "=", "+", "MY.", "queue", " in ", " from ", "(", "\n",
    "\\\n", "#", "[", "]", "x", "Item", "request_memory", "request_cpus", "request_disk",
    "executable", "arguments", "accounting_group", "nice_user", "universe", "1", "2G", "-", "*",
    '"', "'", "true", " ", "\x00", "é",
]
# fmt: on


def submit(text: str, **kw):
    kw.setdefault("owner", "alice")
    return parse_submit(textwrap.dedent(text), "job.sub", **kw)


def procs(text: str, **kw) -> list[dict[str, str]]:
    return submit(text, **kw).procs


def one(text: str, **kw) -> dict[str, str]:
    (ad,) = procs(text, **kw)
    return ad


class TestBasicJob:
    def test_sleep_job_ad(self):
        result = submit(
            """
            executable = /bin/sleep
            arguments = 600
            request_cpus = 1
            request_memory = 2GB
            queue
            """,
            cluster_id=12,
            qdate=3600,
        )
        assert result.cluster_id == 12 and result.warnings == []
        assert result.procs == [
            {
                "ClusterId": "12",
                "ProcId": "0",
                "Owner": '"alice"',
                "User": '"alice@mockpool"',
                "QDate": "3600",
                "JobStatus": "1",
                "JobUniverse": "5",
                "Cmd": '"/bin/sleep"',
                "Args": '"600"',
                "MockDuration": "600",
                "RequestCpus": "1",
                "RequestMemory": "2048",
                "RequestDisk": "1048576",
                "Requirements": (
                    '(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && '
                    "(TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && "
                    "((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))"
                ),
                "FileSystemDomain": '"mockpool"',
                "ShouldTransferFiles": '"IF_NEEDED"',
                "WhenToTransferOutput": '"ON_EXIT"',
                "Rank": "0.0",
                "JobPrio": "0",
                "JobLeaseDuration": "2400",
            }
        ]

    def test_defaults(self):
        ad = one("executable = /usr/bin/true\nqueue\n")
        assert (ad["RequestCpus"], ad["RequestMemory"], ad["RequestDisk"]) == (
            "1",
            "128",
            "1048576",
        )
        assert ad["JobLeaseDuration"] == "2400" and ad["JobPrio"] == "0" and ad["Rank"] == "0.0"
        assert "MockDuration" not in ad and "Args" not in ad and "AccountingGroup" not in ad

    def test_command_names_are_case_insensitive_with_aliases(self):
        ad = one("Cmd = sleep\nARGS = 30\nPrio = 5\nPreferences = Memory\nqueue\n")
        assert (ad["Cmd"], ad["Args"], ad["JobPrio"], ad["Rank"], ad["MockDuration"]) == (
            '"sleep"',
            '"30"',
            "5",
            "Memory",
            "30",
        )

    def test_universe(self):
        assert one("universe = Scheduler\nexecutable = x\nqueue\n")["JobUniverse"] == "7"
        docker = one("universe = docker\ndocker_image = centos:9\nexecutable = x\nqueue\n")
        assert (docker["JobUniverse"], docker["WantDocker"]) == ("5", "true")
        with pytest.raises(
            SubmitError, match=r'^job.sub:1: universe = "standard": unknown universe'
        ):
            one("universe = standard\nexecutable = x\nqueue\n")

    def test_new_syntax_arguments(self):
        ad = one('executable = /bin/sleep\narguments = "\'12\' ""quoted"" x"\nqueue\n')
        # stored in HTCondor's raw form: the words [12, "quoted", x]
        assert ad["Arguments"] == quote('12 "quoted" x')
        assert "Args" not in ad
        assert ad["MockDuration"] == "12"

    @pytest.mark.parametrize(
        ("cmd", "args", "duration"),
        [
            ("/bin/sleep", "600", "600"),
            ("sleep", "1.5", "1.5"),
            ("/usr/bin/sleep", "2m", "120"),
            ("/bin/sleep", "abc", None),
            ("/bin/sleepy", "5", None),
            ("/bin/sleep", "", None),
        ],
    )
    def test_mock_duration_from_sleep(self, cmd, args, duration):
        ad = one(f"executable = {cmd}\narguments = {args}\nqueue\n")
        assert ad.get("MockDuration") == duration

    def test_explicit_mock_duration_wins(self):
        ad = one("executable = /bin/sleep\narguments = 600\n+MockDuration = 42\nqueue\n")
        assert ad["MockDuration"] == "42"
        ad = one("executable = /bin/hostname\n+mockduration = 7\nqueue\n")
        assert ad["MockDuration"] == "7"  # the attribute keeps the spelling other code reads

    def test_recorded_commands(self):
        ad = one(
            """
            executable = x
            initialdir = /data/run1
            input = in.txt
            output = out.$(Process)
            error = err.txt
            log = job.log
            batch_name = "my batch"
            queue
            """
        )
        assert (ad["Iwd"], ad["In"], ad["Out"], ad["Err"], ad["UserLog"], ad["JobBatchName"]) == (
            '"/data/run1"',
            '"in.txt"',
            '"out.0"',
            '"err.txt"',
            '"job.log"',
            '"my batch"',
        )

    def test_unknown_commands_are_variables(self):
        ad = one(
            "executable = x\nshould_transfer_files = YES\nmy_var = 5\narguments = $(my_var)\nqueue\n"
        )
        assert ad["Args"] == '"5"' and "should_transfer_files" not in ad

    def test_strings_are_escaped(self):
        ad = one('executable = /path/with "quote" and \\back\nqueue\n')
        assert ad["Cmd"] == '"/path/with \\"quote\\" and \\\\back"'

    def test_job_lease_duration(self):
        assert one("executable = x\njob_lease_duration = 600\nqueue\n")["JobLeaseDuration"] == "600"
        result = submit("executable = x\njob_lease_duration = 5\nqueue\n")
        assert result.procs[0]["JobLeaseDuration"] == "20"
        assert result.warnings == ["job.sub:2: JobLeaseDuration under 20 s; using 20"]


class TestUnits:
    @pytest.mark.parametrize(
        ("text", "mb"),
        [
            ("2GB", "2048"),
            ("512", "512"),
            ("2 GB", "2048"),
            ("1024M", "1024"),
            ("1500K", "2"),
            ("1.5G", "1536"),
            ("1T", "1048576"),
            ("2g", "2048"),
            ("4 * 1024", "4096"),
            ("1G, 4G", "1024"),
        ],
    )
    def test_request_memory_in_mb(self, text, mb):
        assert one(f"executable = x\nrequest_memory = {text}\nqueue\n")["RequestMemory"] == mb

    @pytest.mark.parametrize(
        ("text", "kb"),
        [
            ("1G", "1048576"),
            ("1024", "1024"),
            ("100M", "102400"),
            ("1GB", "1048576"),
            ("10k", "10"),
        ],
    )
    def test_request_disk_in_kb(self, text, kb):
        assert one(f"executable = x\nrequest_disk = {text}\nqueue\n")["RequestDisk"] == kb

    def test_request_cpus(self):
        ad = one("executable = x\nrequest_cpus = 4\nqueue\n")
        assert ad["RequestCpus"] == "4"
        assert "&& (TARGET.Cpus >= RequestCpus) &&" in ad["Requirements"]

    def test_undefined_request_memory(self):
        ad = one("executable = x\nrequest_memory = undefined\nqueue\n")
        assert "RequestMemory" not in ad and "Memory" not in ad["Requirements"]

    @pytest.mark.parametrize(
        ("line", "problem"),
        [
            ("request_memory = 5 PB", 'request_memory = "5 PB": '),
            ("request_disk = -1", 'request_disk = "-1": expected a size'),
            ("request_cpus = -2", 'request_cpus = "-2": expected a number of CPUs'),
            ("request_cpus = (1", 'request_cpus = "(1": '),
            ("priority = high", 'priority = "high": expected an integer'),
            ("nice_user = sure", 'nice_user = "sure": expected True or False'),
        ],
    )
    def test_bad_values(self, line, problem):
        with pytest.raises(SubmitError) as info:
            one(f"executable = x\n{line}\nqueue\n")
        assert str(info.value).startswith(f"job.sub:2: {problem}")


class TestRequirements:
    def test_user_requirements_come_first(self):
        ad = one('executable = x\nrequirements = OpSys == "LINUX"\nqueue\n')
        assert ad["Requirements"] == (  # the user's OpSys: no OpSys clause
            '(OpSys == "LINUX") && (TARGET.Arch == "X86_64") && (TARGET.Disk >= RequestDisk) && '
            "(TARGET.Memory >= RequestMemory) && "
            "((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))"
        )

    def test_cpus_clause_skipped_when_user_mentions_cpus(self):
        ad = one("executable = x\nrequest_cpus = 2\nrequirements = TARGET.Cpus >= 8\nqueue\n")
        assert ad["Requirements"] == (
            '(TARGET.Cpus >= 8) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && '
            "(TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && "
            "((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))"
        )

    def test_forced_requirements_replace_everything(self):
        ad = one(
            "executable = x\nrequirements = a\nrequest_cpus = 2\n+Requirements = true\nqueue\n"
        )
        assert ad["Requirements"] == "true"

    def test_validator_sees_user_expressions(self):
        seen: list[str] = []

        def validate(text: str) -> None:
            seen.append(text)
            if text.count("(") != text.count(")"):
                raise ValueError("unbalanced parentheses")

        one(
            "executable = x\nrequirements = Memory > 1\nrank = Mips\n+Foo = 1\nqueue\n",
            validate=validate,
        )
        assert sorted(seen) == ["1", "Memory > 1", "Mips"]
        with pytest.raises(
            SubmitError, match=r'^job.sub:2: requirements = "\(Memory > 1": unbalanced'
        ):
            one("executable = x\nrequirements = (Memory > 1\nqueue\n", validate=validate)


class TestAttributes:
    def test_plus_and_my_attributes(self):
        ad = one(
            'executable = x\n+Project = "physics"\nMY.Weight = 2.5\n+Flag = $(flag:true)\nqueue\n'
        )
        assert (ad["Project"], ad["Weight"], ad["Flag"]) == ('"physics"', "2.5", "true")
        assert list(ad)[-3:] == ["Project", "Weight", "Flag"]

    def test_later_definition_wins(self):
        ad = one("executable = x\n+A = 1\nMY.a = 2\nqueue\n")
        assert [(k, v) for k, v in ad.items() if k.lower() == "a"] == [("a", "2")]

    def test_forced_attribute_overrides_builtin(self):
        ad = one("executable = x\npriority = 1\n+jobprio = 9\nqueue\n")
        assert ad["JobPrio"] == "9" and "jobprio" not in ad

    def test_empty_forced_attribute(self):
        with pytest.raises(SubmitError, match=r"^job.sub:2: \+Foo has no value"):
            one("executable = x\n+Foo =\nqueue\n")


class TestAccounting:
    def test_group_and_owner(self):
        ad = one("executable = x\naccounting_group = group_physics\nqueue\n")
        assert (ad["AcctGroup"], ad["AcctGroupUser"], ad["AccountingGroup"]) == (
            '"group_physics"',
            '"alice"',
            '"group_physics.alice"',
        )

    def test_group_and_user(self):
        ad = one(
            "executable = x\naccounting_group = group_physics.hep\naccounting_group_user = bob\nqueue\n"
        )
        assert (ad["AcctGroup"], ad["AcctGroupUser"], ad["AccountingGroup"]) == (
            '"group_physics.hep"',
            '"bob"',
            '"group_physics.hep.bob"',
        )

    def test_user_alone(self):
        ad = one("executable = x\naccounting_group_user = bob\nqueue\n")
        assert ad["AccountingGroup"] == '"bob"' and "AcctGroup" not in ad

    def test_nice_user(self):
        ad = one("executable = x\nnice_user = true\nqueue\n")
        # HTCondor 24 writes the group and no NiceUser attribute (checked with its Submit)
        assert "NiceUser" not in ad
        assert (ad["MaxJobRetirementTime"], ad["AccountingGroup"]) == ("0", '"nice-user.alice"')
        result = submit("executable = x\naccounting_group = g\nnice_user = True\nqueue\n")
        assert result.procs[0]["AccountingGroup"] == '"g.alice"'
        assert "nice_user conflicts with accounting_group" in result.warnings[0]

    def test_bad_group_name(self):
        with pytest.raises(SubmitError, match=r'^job.sub:2: accounting_group = "a b": not a valid'):
            one("executable = x\naccounting_group = a b\nqueue\n")


class TestQueue:
    def test_queue_n(self):
        ads = procs(
            "executable = x\narguments = $(Cluster).$(Process) $(ClusterId).$(ProcId) $(Step)\nqueue 3\n",
            cluster_id=5,
        )
        assert [a["Args"] for a in ads] == ['"5.0 5.0 0"', '"5.1 5.1 1"', '"5.2 5.2 2"']
        assert [a["ProcId"] for a in ads] == ["0", "1", "2"]

    def test_queue_zero_and_expression(self):
        assert (
            procs("executable = x\nqueue 0\nqueue 2 * 2\nN = 3\nqueue $(N)\n")
            and len(procs("executable = x\nqueue 0\nqueue 2 * 2\nN = 3\nqueue $(N)\n")) == 7
        )

    def test_several_queue_statements_see_current_values(self):
        ads = procs("executable = x\narguments = a\nqueue\narguments = b\nqueue 2\n")
        assert [(a["ProcId"], a["Args"]) for a in ads] == [("0", '"a"'), ("1", '"b"'), ("2", '"b"')]

    def test_in_list_on_one_line(self):
        ads = procs("executable = x\narguments = $(Item)\nqueue in alpha, beta gamma\n")
        assert [a["Args"] for a in ads] == ['"alpha"', '"beta"', '"gamma"']

    def test_named_variable_in_parenthesised_list(self):
        ads = procs("executable = /bin/sleep\narguments = $(t)\nqueue t in (10, 20)\n")
        assert [a["MockDuration"] for a in ads] == ["10", "20"]

    def test_count_times_items(self):
        ads = procs(
            "executable = x\narguments = $(x)-$(Step)-$(ItemIndex)-$(Row)\nqueue 2 x in (a, b)\n"
        )
        assert [a["Args"] for a in ads] == ['"a-0-0-0"', '"a-1-0-0"', '"b-0-1-1"', '"b-1-1-1"']

    def test_multiline_in_list(self):
        ads = procs(
            "executable = x\narguments = $(f)\nqueue f in (\n  one, two\n  # skipped\n  three\n)\n"
        )
        assert [a["Args"] for a in ads] == ['"one"', '"two"', '"three"']

    def test_from_rows(self):
        # htcondor 25's itemdata: the last variable takes the rest of the line
        ads = procs(
            """
            executable = x
            arguments = [$(x)] [$(y)]
            queue x,y from (
              a 1
              b 2, 3
              c,4 5 6
              d
            )
            """
        )
        assert [a["Args"] for a in ads] == [
            '"[a] [1]"',
            '"[b] [2, 3]"',
            '"[c] [4 5 6]"',
            '"[d] []"',
        ]

    def test_from_with_slice_and_count(self):
        ads = procs(
            "executable = x\narguments = $(x) $(ItemIndex)\nqueue 2 x from [1:] (\na\nb\nc\n)\n"
        )
        assert [a["Args"] for a in ads] == ['"b 1"', '"b 1"', '"c 2"', '"c 2"']
        ads = procs("executable = x\narguments = $(Item)\nqueue in [::2] (a, b, c, d, e)\n")
        assert [a["Args"] for a in ads] == ['"a"', '"c"', '"e"']

    def test_from_file(self):
        ads = procs(
            "executable = /bin/sleep\narguments = $(t)\nqueue name, t from items.txt\n",
            item_files={"items.txt": "x1 10\n\nx2 20\n"},
        )
        assert [a["MockDuration"] for a in ads] == ["10", "20"]

    def test_jobs_without_live_variables_are_identical_but_for_procid(self):
        ads = procs("executable = /bin/sleep\narguments = 60\nqueue 1000\n")
        assert len(ads) == 1000 and ads[999]["ProcId"] == "999"
        assert {k: v for k, v in ads[999].items() if k != "ProcId"} == {
            k: v for k, v in ads[0].items() if k != "ProcId"
        }

    @pytest.mark.parametrize(
        ("line", "problem"),
        [
            ("queue x matching *.dat", "queue ... matching: the matching files were not sent"),
            ("queue lots", "'lots' is not a number of jobs (or an unknown queue form)"),
            ("queue -1", "is not a number of jobs"),
            ("queue x in", "queue ... in: no items"),
            ("queue x, y in (a, b)", "'queue ... in' takes one variable"),
            ("queue 1bad in (a)", "is not a variable name"),
            ("queue x from cmd |", "not supported"),
            ("queue x from no_such_file.txt", "queue ... from no_such_file.txt: the file was"),
            ("queue x in (a) extra", "unexpected 'extra' after the list"),
            ("queue x in [1:2:0] (a)", "a slice step must be positive"),
        ],
    )
    def test_bad_queue(self, line, problem):
        with pytest.raises(SubmitError) as info:
            procs(f"executable = x\n{line}\n")
        assert str(info.value).startswith("job.sub:2: ") and problem in str(info.value)

    def test_unclosed_item_list(self):
        with pytest.raises(SubmitError, match=r"^job.sub:2: queue: the item list has no closing"):
            procs("executable = x\nqueue x in (\na\nb\n")


class TestErrors:
    def test_no_queue(self):
        with pytest.raises(SubmitError, match=r"no queue statement"):
            procs("executable = x\n")

    def test_no_executable(self):
        with pytest.raises(SubmitError, match=r"^job.sub:2: no executable given"):
            procs("arguments = 1\nqueue\n")

    def test_text_that_is_not_a_macro_is_kept(self):
        # htcondor2.Submit(...).expand("arguments") gives "$(foo $ENV( B :z) $(a-b)"
        ad = one("executable = x\narguments = $(foo $ENV( B :z) $(a-b)\nqueue\n")
        assert ad["Args"] == '"$(foo $ENV( B :z) $(a-b)"'

    def test_macro_cycle(self):
        with pytest.raises(SubmitError, match=r"^job.sub:3: arguments: macro cycle: a -> b -> a$"):
            procs("a = $(b)\nb = $(a)\narguments = $(a)\nexecutable = x\nqueue\n")

    def test_syntax_error(self):
        with pytest.raises(SubmitError, match=r"^job.sub:2: cannot parse 'what is this'"):
            procs("executable = x\nwhat is this\nqueue\n")

    def test_bad_owner(self):
        with pytest.raises(SubmitError, match="not a valid owner"):
            parse_submit("executable = x\nqueue\n", owner="two words")

    @pytest.mark.parametrize(
        "text",
        [
            "queue",
            "executable = $(",
            "+ = 1",
            "queue x in (",
            "request_memory = $INT(x)\nexecutable=x\nqueue",
            "executable = x\nqueue 99999999999",
            "\x00\x01",
            "executable = x\nqueue x from [a:b] (1)",
            "executable = x\n+A = $CHOICE(9, a)\nqueue",
        ],
    )
    def test_bad_input_is_a_submit_error_never_a_traceback(self, text):
        with pytest.raises(SubmitError):
            parse_submit(text, owner="alice")


class TestMacros:
    def test_self_reference_and_defaults(self):
        ad = one(
            "executable = x\narguments = -a\narguments = $(arguments) -b\n+N = $(undefined:7)\nqueue\n"
        )
        assert ad["Args"] == '"-a -b"' and ad["N"] == "7"

    def test_live_variables_through_other_variables(self):
        ads = procs("executable = x\nname = run_$(Process)\noutput = $(name).out\nqueue 2\n")
        assert [a["Out"] for a in ads] == ['"run_0.out"', '"run_1.out"']

    def test_int_macro_with_item(self):
        ads = procs(
            "executable = /bin/sleep\nsecs = $(Item) * 60\narguments = $INT(secs)\nqueue in (1, 2)\n"
        )
        assert [a["MockDuration"] for a in ads] == ["60", "120"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join))
def test_any_text_is_parsed_or_refused_with_submit_error(text):
    for description in (text, f"executable = x\n{text}\nqueue\n"):
        with contextlib.suppress(SubmitError):
            parse_submit(description, owner="alice")


def test_ads_are_classad_expressions_that_match_a_slot():
    from mockpool.classad import evaluate, parse_ad, parse_expr

    (ad,) = procs(
        """
        executable = /bin/sleep
        arguments = "'1 2' x"
        request_cpus = 2
        request_memory = 1G
        requirements = Memory > 512
        +Project = "a\\"b"
        nice_user = true
        queue
        """,
        validate=parse_expr,
    )
    job = parse_ad("[" + "; ".join(f"{k} = {v}" for k, v in ad.items()) + "]")
    assert evaluate(parse_expr(ad["Project"])) == 'a"b'
    assert evaluate(parse_expr(ad["Arguments"])) == "1' '2 x"  # HTCondor quotes the space
    machine = 'Arch = "X86_64"; OpSys = "LINUX"; HasFileTransfer = true; Disk = 10000000'
    fits = parse_ad(f"[{machine}; Memory = 4096; Cpus = 4]")
    too_small = parse_ad(f"[{machine}; Memory = 4096; Cpus = 1]")
    assert evaluate(job.lookup("Requirements"), job, fits) is True
    assert evaluate(job.lookup("Requirements"), job, too_small) is False


class TestUserFiles:
    """The schedd reads no file and no environment variable for a user: item files and
    $ENV values come with the submit, read on the submitting side (issue 7, item 1)."""

    def test_a_path_not_sent_is_refused_not_read(self, tmp_path):
        secret = tmp_path / "token"
        secret.write_text("admin-token\n")
        with pytest.raises(SubmitError) as info:
            procs(f"executable = x\narguments = $(t)\nqueue t from {secret}\n")
        message = str(info.value)
        assert message.startswith(f"job.sub:3: queue ... from {secret}: the file was not sent")
        assert "admin-token" not in message

    def test_a_fifo_is_never_opened(self, tmp_path):
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)  # opening it for reading would block until a writer comes
        with pytest.raises(SubmitError, match=r"^job.sub:2: queue \.\.\. from .*fifo: the file"):
            procs(f"executable = x\nqueue t from {fifo}\n")

    def test_include_needs_the_file_sent_and_refuses_commands(self):
        with pytest.raises(
            SubmitError, match=r"^job.sub:2: include /etc/passwd: the file was not sent"
        ):
            procs("executable = x\ninclude : /etc/passwd\nqueue\n")
        with pytest.raises(SubmitError, match=r"^job.sub:1: only 'include : <file>'"):
            procs("@include : cmd |\nexecutable = x\nqueue\n")
        # a variable named include is still a variable
        assert one("include = 1\nexecutable = x\nqueue\n")["Cmd"] == '"x"'

    def test_an_included_file_is_read_in_place_on_the_submitting_side(self, tmp_path):
        (tmp_path / "common.sub").write_text('request_cpus = 4\n+Project = "hep"\n')
        text = "executable = x\ninclude : common.sub\nrequest_memory = 1G\nqueue\n"
        inputs = submit_inputs(
            text, "job.sub", read_item_file=lambda p: (tmp_path / p).read_text(), environ={}
        )
        assert list(inputs.item_files) == ["common.sub"]
        ad = one(text, item_files=inputs.item_files)
        assert (ad["RequestCpus"], ad["Project"], ad["RequestMemory"]) == ("4", '"hep"', "1024")

    def test_item_file_path_with_macros_is_looked_up_as_expanded(self):
        ads = procs(
            "dir = lists\nexecutable = x\narguments = $(Item)\nqueue from $(dir)/a.txt\n",
            item_files={"lists/a.txt": "p\nq\n"},
        )
        assert [a["Args"] for a in ads] == ['"p"', '"q"']

    def test_env_is_the_submitters_not_the_schedds(self, monkeypatch):
        monkeypatch.setenv("MOCKPOOL_TEST_SECRET", "schedd-secret")
        text = 'executable = x\n+S = "$ENV(MOCKPOOL_TEST_SECRET)"\n+D = "$ENV(NOPE:dflt)"\nqueue\n'
        assert one(text)["S"] == '""'
        ad = one(text, env={"MOCKPOOL_TEST_SECRET": "users-value"})
        assert (ad["S"], ad["D"]) == ('"users-value"', '"dflt"')

    def test_submit_inputs_reads_each_named_file_once_on_the_submitting_side(self):
        read: list[str] = []

        def reader(path: str) -> str:
            read.append(path)
            return {"a.txt": "1\n2\n", "b/c.txt": "x y\n"}[path]

        text = textwrap.dedent(
            """\
            executable = x
            sub = b
            arguments = $(Item) $ENV(USER_A) $ENV(USER_B:z) $ENV(UNSET)
            queue from a.txt
            queue p, q from $(sub)/c.txt
            queue in (k, l)
            queue 2
            """
        )
        inputs = submit_inputs(
            text, "job.sub", read_item_file=reader, environ={"USER_A": "a", "USER_B": "b"}
        )
        assert read == ["a.txt", "b/c.txt"]
        assert inputs.item_files == {"a.txt": "1\n2\n", "b/c.txt": "x y\n"}
        assert inputs.env == {"USER_A": "a", "USER_B": "b"}
        # what the schedd then queues from them: 2 + 1 + 2 + 2 jobs
        result = submit(text, item_files=inputs.item_files, env=inputs.env)
        assert len(result.procs) == 7
        assert result.procs[0]["Args"] == '"1 a b"'

    def test_submit_inputs_error_names_the_line(self):
        def reader(path: str) -> str:
            raise FileNotFoundError(2, "No such file or directory")

        with pytest.raises(SubmitError, match=r"^job.sub:2: queue \.\.\. from gone.txt: No such"):
            submit_inputs(
                "executable = x\nqueue from gone.txt\n",
                "job.sub",
                read_item_file=reader,
                environ={},
            )

    def test_submit_inputs_does_not_apply_the_schedds_job_limit(self):
        inputs = submit_inputs(
            "executable = x\nqueue 999999\n", read_item_file=lambda p: "", environ={}
        )
        assert inputs.item_files == {} and inputs.env == {}


class TestHold:
    """condor_submit's SetJobStatus (submit_utils.cpp): hold = true queues the job held
    with HoldReasonCode 15 (SubmittedOnHold) and "submitted on hold at user's request"."""

    @pytest.mark.parametrize("word", ["true", "True", "yes", "1"])
    def test_hold_true(self, word):
        ads = procs(f"executable = x\nhold = {word}\nqueue 2\n")
        for ad in ads:
            assert ad["JobStatus"] == "5"
            assert ad["HoldReasonCode"] == "15"
            assert ad["HoldReason"] == '"submitted on hold at user\'s request"'

    @pytest.mark.parametrize("text", ["hold = false\n", "hold = no\n", ""])
    def test_not_held(self, text):
        ad = one(f"executable = x\n{text}queue\n")
        assert ad["JobStatus"] == "1" and "HoldReasonCode" not in ad

    def test_bad_value(self):
        with pytest.raises(SubmitError, match=r'^job.sub:2: hold = "maybe": expected True or'):
            procs("executable = x\nhold = maybe\nqueue\n")


class TestMaxJobsPerSubmission:
    """MAX_JOBS_PER_SUBMISSION (param_info.in: default 20000): the schedd refuses a submit
    whose jobs would exceed it (qmgmt.cpp NewProc; condor_submit prints "Number of
    submitted jobs would exceed MAX_JOBS_PER_SUBMISSION")."""

    def test_default_is_htcondors(self):
        assert MAX_JOBS_PER_SUBMISSION == 20000

    def test_at_the_limit_is_accepted(self):
        assert len(procs("executable = x\nqueue 10\n", max_jobs=10)) == 10

    @pytest.mark.parametrize(
        ("queue", "line"),
        [
            ("queue 11\n", 2),
            ("queue 3 x in (a, b, c, d)\n", 2),  # 3 x 4 = 12 jobs
            ("queue 6\nqueue 5\n", 3),  # 11 in all: the second statement is refused
        ],
    )
    def test_over_the_limit_is_refused(self, queue, line):
        with pytest.raises(SubmitError) as info:
            procs(f"executable = x\n{queue}", max_jobs=10)
        assert str(info.value) == (
            f"job.sub:{line}: Number of submitted jobs would exceed MAX_JOBS_PER_SUBMISSION (10)"
        )

    def test_a_huge_count_is_refused_before_any_job_is_built(self):
        with pytest.raises(SubmitError, match=r"exceed MAX_JOBS_PER_SUBMISSION \(20000\)"):
            procs("executable = x\nqueue 100000000000000000000\n")
        with pytest.raises(SubmitError, match=r"exceed MAX_JOBS_PER_SUBMISSION \(20000\)"):
            procs("executable = x\nqueue 20001\n")


class TestNumbersThatDoNotFit:
    """Values that would not fit the job ad's types (64-bit integers, finite reals) are
    refused: HTCondor's ClassAd language reads 99999999999999999999 as 0 and 1e400 as INF
    (classad2), so queueing them would queue something the user did not write."""

    @pytest.mark.parametrize(
        "line",
        [
            "request_memory = 99999999999999999999",
            "request_memory = 1e300",
            "request_memory = 1e400",
            "request_disk = 99999999999999999999",
            "request_cpus = 1e300",
            "request_cpus = 99999999999999999999",
            "priority = 99999999999999999999",
            "priority = 1e400",
            "+Foo = 99999999999999999999",
            "+Foo = 1 + 9223372036854775808",
            "+Foo = 1e400",
            "requirements = Memory > 18446744073709551616",
            "rank = 1e999",
        ],
    )
    def test_refused(self, line):
        with pytest.raises(SubmitError) as info:
            procs(f"executable = x\n{line}\nqueue\n")
        message = str(info.value)
        assert message.startswith("job.sub:2: ") and "out of range" in message

    def test_sleep_longer_than_64_bits_is_refused(self):
        with pytest.raises(SubmitError, match=r"^job.sub:2: arguments = .*out of range"):
            procs("executable = /bin/sleep\narguments = 99999999999999999999999\nqueue\n")

    @pytest.mark.parametrize(
        ("line", "attr", "text"),
        [
            ("request_memory = 9223372036854775807", "RequestMemory", "9223372036854775807"),
            ("+Foo = -9223372036854775808", "Foo", "-9223372036854775808"),
            ("+Foo = 1e300", "Foo", "1e300"),
            ('+Foo = "99999999999999999999"', "Foo", '"99999999999999999999"'),
        ],
    )
    def test_largest_values_that_fit_are_kept(self, line, attr, text):
        assert one(f"executable = x\n{line}\nqueue\n")[attr] == text


class _NoEnvironment(dict):  # os.environ stand-in that fails the test when read
    def __getitem__(self, key):
        raise AssertionError(f"the schedd's environment was read: {key}")

    get = __getitem__  # type: ignore[assignment]

    def __contains__(self, key):
        raise AssertionError(f"the schedd's environment was read: {key}")


@pytest.mark.parametrize(
    "text",
    [
        "executable = x\narguments = $(Item)\nqueue from /etc/passwd\n",
        "executable = x\nqueue from $(dir)/items\n",
        "include : /etc/passwd\nexecutable = x\nqueue\n",
        'executable = x\n+S = "$ENV(HOME) $ENV(PATH:p)"\narguments = $(arguments) $ENV(X)\nqueue\n',
        "executable = x\nqueue 2 x in (a, b)\n",
    ],
)
def test_parse_reads_no_file_and_no_environment(text, monkeypatch):
    import builtins
    import io
    import pathlib

    def refuse(*args, **kwargs):
        raise AssertionError(f"a file was opened: {args}")

    for module, name in ((builtins, "open"), (io, "open"), (os, "open")):
        monkeypatch.setattr(module, name, refuse)
    for name in ("open", "read_text", "read_bytes"):
        monkeypatch.setattr(pathlib.Path, name, refuse)
    monkeypatch.setattr(os, "environ", _NoEnvironment())
    with contextlib.suppress(SubmitError):
        parse_submit(text, "job.sub", owner="alice", env={"X": "1"})


# --- concurrency limits (submit_utils.cpp SetConcurrencyLimits) ----------------------------


def test_concurrency_limits_lowercased_checked_sorted_joined() -> None:
    ad = one("executable = /bin/sleep\nconcurrency_limits = Matlab, DB:2 license.Foo\nqueue\n")
    assert ad["ConcurrencyLimits"] == '"db:2,license.foo,matlab"'
    assert "ConcurrencyLimits" not in one("executable = /bin/sleep\nqueue\n")
    # a count that strtod cannot read is 1 to HTCondor, so the item is accepted as written
    assert (
        one("executable = x\nconcurrency_limits = a:many\nqueue\n")["ConcurrencyLimits"]
        == '"a:many"'
    )


@pytest.mark.parametrize("bad", ["a.b.c", "1abc", "lic-1", "a.:2"])
def test_invalid_concurrency_limit_names_line(bad: str) -> None:
    with pytest.raises(
        SubmitError, match=f'job.sub:2: concurrency_limits = "{bad}": invalid concurrency limit'
    ):
        one(f"executable = /bin/sleep\nconcurrency_limits = {bad}\nqueue\n")


def test_concurrency_limits_expr_and_not_both() -> None:
    ad = one('executable = x\nconcurrency_limits_expr = strcat("lic_", TARGET.Arch)\nqueue\n')
    assert ad["ConcurrencyLimits"] == 'strcat("lic_", TARGET.Arch)'
    with pytest.raises(SubmitError, match=r"job.sub:2: .*can't be used together"):
        one('executable = x\nconcurrency_limits = a\nconcurrency_limits_expr = "b"\nqueue\n')
