"""The java universe's job attributes as condor_submit writes them (values by hand; the
same descriptions were recorded from HTCondor 24.12 in tests/conformance/submit_corpus/113
to 117)."""

from __future__ import annotations

from mockpool.schedd.submit import parse_submit


def job(text: str, iwd: str = "") -> dict[str, str]:
    return parse_submit(text, "job.sub", owner="alice", iwd=iwd).procs[0]


JAVA = "universe = java\nexecutable = Main.class\narguments = Main 1\n"


def test_with_transfer_the_jvm_runs_and_the_class_travels_as_input():
    ad = job(JAVA + "jar_files = a.jar, lib/b.jar\ntransfer_input_files = data.txt\nqueue\n", "/h")
    assert (ad["Cmd"], ad["TransferExecutable"]) == ('"java"', "false")
    assert ad["JarFiles"] == '"a.jar, lib/b.jar"'  # as written
    # the class file's full path (Iwd /h) and each jar are added after the listed files
    assert ad["TransferInput"] == '"data.txt,/h/Main.class,a.jar,lib/b.jar"'


def test_without_listed_input_files_nothing_is_added():
    ad = job(JAVA + "jar_files = a.jar\nqueue\n")
    assert "TransferInput" not in ad and ad["Cmd"] == '"java"'


def test_without_transfer_cmd_is_the_class_files_path():
    ad = job(JAVA + "should_transfer_files = NO\nqueue\n", "/home/alice")
    assert ad["Cmd"] == '"/home/alice/Main.class"' and "TransferExecutable" not in ad


def test_jvm_arguments_in_either_syntax():
    assert job(JAVA + "java_vm_args = -Xmx1g -Dx=1\nqueue\n")["JavaVMArgs"] == '"-Xmx1g -Dx=1"'
    ad = job(JAVA + "java_vm_args = \"-Xmx1g 'a b'\"\nqueue\n")
    assert ad["JavaVMArguments"] == "\"-Xmx1g a' 'b\""  # HTCondor's raw form of "a b"


def test_other_universes_keep_their_cmd_and_only_gain_jar_files():
    ad = job("executable = /bin/true\njar_files = a.jar\nqueue\n")
    assert (ad["Cmd"], ad["JarFiles"]) == ('"/bin/true"', '"a.jar"')
    assert "TransferExecutable" not in ad
