"""The submitting side's half of a submit (issue 7, items 1 and 7): submit and item files
are read by the user's tool, only regular UTF-8 files, never blocking; the CLI's job ids
and owners select jobs and never add to a constraint."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from mockpool.cli.job_cmds import selection_constraint
from mockpool.cli.main import main
from mockpool.pool import submit_files
from mockpool.pool.spec import load_spec
from mockpool.pool.specmodel import SpecError
from mockpool.pool.submit_files import SubmitFileError, read_submit_inputs, read_user_file
from mockpool.schedd.submit import SubmitError, parse_submit


class TestReadUserFile:
    def test_regular_utf8_file(self, tmp_path: Path) -> None:
        (tmp_path / "a.sub").write_text("executable = é\n", encoding="utf-8")
        assert read_user_file(tmp_path / "a.sub") == "executable = é\n"

    def test_not_utf8_names_file_line_and_byte(self, tmp_path: Path) -> None:
        (tmp_path / "a.sub").write_bytes(b"executable = x\narguments = \xff\xfe\nqueue\n")
        with pytest.raises(SubmitFileError) as info:
            read_user_file(tmp_path / "a.sub")
        assert str(info.value) == f"{tmp_path / 'a.sub'}:2: not UTF-8 text (byte 0xff at offset 27)"

    def test_fifo_is_refused_without_blocking(self, tmp_path: Path) -> None:
        os.mkfifo(tmp_path / "fifo")  # no writer: a blocking open would never return
        with pytest.raises(SubmitFileError, match=r"fifo: not a regular file$"):
            read_user_file(tmp_path / "fifo")

    @pytest.mark.parametrize("path", ["/dev/zero", "/"])
    def test_device_or_folder_is_refused(self, path: str) -> None:
        with pytest.raises(SubmitFileError, match="not a regular file"):
            read_user_file(path)

    def test_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(SubmitFileError, match=r"cannot read .*nope: No such file"):
            read_user_file(tmp_path / "nope")

    def test_too_large(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(submit_files, "MAX_FILE_BYTES", 10)
        (tmp_path / "big").write_text("x" * 11)
        with pytest.raises(SubmitFileError, match="larger than"):
            read_user_file(tmp_path / "big")


class TestReadSubmitInputs:
    def test_relative_item_files_from_base_dir(self, tmp_path: Path) -> None:
        (tmp_path / "items.txt").write_text("a\nb\n")
        inputs = read_submit_inputs(
            "executable = x\nqueue from items.txt\n", base_dir=tmp_path, environ={"X": "1"}
        )
        assert inputs.item_files == {"items.txt": "a\nb\n"} and inputs.env == {}

    def test_a_fifo_item_file_names_the_line(self, tmp_path: Path) -> None:
        os.mkfifo(tmp_path / "fifo")
        with pytest.raises(Exception, match=r"^job.sub:2: queue \.\.\. from fifo: .*not a regular"):
            read_submit_inputs("executable = x\nqueue from fifo\n", "job.sub", base_dir=tmp_path)


class TestSpecWorkload:
    SPEC = textwrap.dedent(
        """\
        [[startds]]
        name = "exec{:04d}"
        [[submit]]
        owner = "alice"
        description = '''
        executable = /bin/sleep
        arguments = $(t)
        queue t from lists/secs.txt
        '''
        """
    )

    def test_item_files_are_read_at_load_from_the_spec_folder(self, tmp_path: Path) -> None:
        (tmp_path / "lists").mkdir()
        (tmp_path / "lists" / "secs.txt").write_text("10\n20\n")
        (tmp_path / "pool.toml").write_text(self.SPEC)
        (item,) = load_spec(tmp_path / "pool.toml").submits
        assert item.inputs.item_files == {"lists/secs.txt": "10\n20\n"}

    def test_a_missing_item_file_is_a_spec_error(self, tmp_path: Path) -> None:
        (tmp_path / "pool.toml").write_text(self.SPEC)
        with pytest.raises(SpecError, match=r"queue \.\.\. from lists/secs.txt: .*No such file"):
            load_spec(tmp_path / "pool.toml")

    def test_a_submit_file_that_is_a_fifo_is_a_spec_error(self, tmp_path: Path) -> None:
        os.mkfifo(tmp_path / "job.sub")
        (tmp_path / "pool.toml").write_text(
            '[[startds]]\nname = "e{:02d}"\n[[submit]]\nowner = "a"\nfile = "job.sub"\n'
        )
        with pytest.raises(SpecError, match=r"file: cannot read .*job.sub: not a regular file"):
            load_spec(tmp_path / "pool.toml")


class TestCliArguments:
    @pytest.mark.parametrize(
        ("args", "constraint"),
        [
            ([], ""),
            (["12"], "((ClusterId == 12))"),
            (["12.3", "alice"], '(Owner == "alice") && ((ClusterId == 12 && ProcId == 3))'),
            (["007"], "((ClusterId == 7))"),
            (["a@b.c"], '(Owner == "a@b.c")'),
        ],
    )
    def test_selection(self, args: list[str], constraint: str) -> None:
        assert selection_constraint("", args) == constraint

    def test_with_a_constraint(self) -> None:
        assert selection_constraint("JobStatus == 1", ["bob"]) == (
            '(JobStatus == 1) && (Owner == "bob")'
        )

    @pytest.mark.parametrize(
        "arg",
        [
            'x" || true || "',  # would have closed the string and matched every job
            "1 || true",
            "1.2.3",
            "99999999999999999999",  # past 64 bits: would have been ClusterId == 0
            "١٢",  # Unicode digits are not a job id
            "a\\b",
            "",
        ],
    )
    def test_arguments_that_would_inject_are_refused(self, arg: str) -> None:
        with pytest.raises(ValueError, match="is not a cluster"):
            selection_constraint("", [arg])

    @pytest.mark.parametrize("tool", ["q", "history", "rm", "hold", "release"])
    def test_tools_refuse_them_before_contacting_the_pool(
        self, tool: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main([tool, "--pool", str(tmp_path), 'x" || true || "']) == 2
        assert "is not a" in capsys.readouterr().err

    def test_submit_file_not_utf8_is_a_clear_error(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        sub = tmp_path / "job.sub"
        sub.write_bytes(b'executable = /bin/sleep\n+Note = "caf\xe9"\nqueue\n')
        assert main(["submit", str(sub), "--pool", str(tmp_path)]) == 1
        err = capsys.readouterr().err
        assert f"{sub}:2: not UTF-8 text" in err and "Traceback" not in err

    def test_submit_item_file_problem_names_the_line(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        os.mkfifo("fifo")
        (tmp_path / "job.sub").write_text("executable = /bin/sleep\nqueue t from fifo\n")
        assert main(["submit", "job.sub", "--pool", str(tmp_path)]) == 1
        assert "job.sub:2: queue ... from fifo: cannot read fifo: not a regular file" in (
            capsys.readouterr().err
        )


def test_queue_matching_lists_the_users_files_and_sends_the_names(tmp_path) -> None:
    for name in ("b.dat", "a.dat", "c.txt"):
        (tmp_path / name).write_text("x")
    (tmp_path / "d.dat").mkdir()
    text = "executable = x\narguments = $(file)\nqueue file matching files *.dat c.*\n"
    inputs = read_submit_inputs(text, "job.sub", base_dir=tmp_path)
    ads = parse_submit(text, "job.sub", owner="alice", item_files=inputs.item_files).procs
    assert [ad["Args"] for ad in ads] == ['"a.dat"', '"b.dat"', '"c.txt"']
    any_kind = "executable = x\narguments = $(Item)\nqueue matching *.dat\n"
    inputs = read_submit_inputs(any_kind, "job.sub", base_dir=tmp_path)
    ads = parse_submit(any_kind, "job.sub", owner="alice", item_files=inputs.item_files).procs
    assert [ad["Args"] for ad in ads] == ['"a.dat"', '"b.dat"', '"d.dat/"']  # GLOB_MARK
    dirs = "executable = x\narguments = $(Item)\nqueue 2 matching dirs *\n"
    inputs = read_submit_inputs(dirs, "job.sub", base_dir=tmp_path)
    ads = parse_submit(dirs, "job.sub", owner="alice", item_files=inputs.item_files).procs
    assert [ad["Args"] for ad in ads] == ['"d.dat/"', '"d.dat/"']
    # the schedd lists no folders: without the names the submit is refused
    with pytest.raises(SubmitError, match=r"job.sub:3: queue \.\.\. matching: the matching"):
        parse_submit(text, "job.sub", owner="alice")
