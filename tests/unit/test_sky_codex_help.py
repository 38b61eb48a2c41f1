"""Reading ``codex sandbox --help`` into a shape, and the command lines each shape gets.

The help texts come from the fake codex itself (a real process, one per shape it plays) and
from hand-written variants of clap's layout that a real codex could print; each test says
which reading it pins down.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from dhtest import skyfake

from deskhand_d.backends import codexhelp, skylaunch
from deskhand_d.backends.codexhelp import ASSUMED, Shape

FAKE_CODEX = skyfake.FAKES / "codex"


def _fake_help(mode: str, *sub: str) -> str:
    env = {**os.environ, "FAKE_CODEX_MODE": mode}
    env.pop("FAKE_CODEX_LOG", None)
    done = subprocess.run(
        [sys.executable, str(FAKE_CODEX), "sandbox", *sub, "--help"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout


def _runtime(tmp_path: Path) -> skylaunch.Runtime:
    return skylaunch.Runtime(
        client=tmp_path / "client",
        codex=tmp_path / "codex",
        ipc=tmp_path / "Group Containers" / "IPC",
        cwd=tmp_path,
    )


@pytest.mark.parametrize(
    ("mode", "fields", "offers"),
    [
        (
            "needs_p",
            {
                "profile": "--permissions-profile",
                "config": "--config",
                "unix_socket": "--allow-unix-socket",
            },
            ["permissions_profile", "config_override"],
        ),
        (
            "long_profile",
            {"profile": "--permissions-profile", "config": "--config"},
            ["permissions_profile", "config_override"],
        ),
        ("ignores_c", {"config": "--config", "state_json": "--sandbox-state-json"},
         ["config_override", "sandbox_state"]),
    ],
)  # fmt: skip
def test_each_plain_shape_is_read_from_its_help(
    mode: str, fields: dict[str, str], offers: list[str]
) -> None:
    """`codex sandbox` with its own options: each option Sky's recipes use is found under its
    long name, the ones a codex lacks stay empty, and the per-system subcommands the combined
    shape still lists do not take over."""
    shape = codexhelp.shape_of(codexhelp.parse(_fake_help(mode)), codexhelp.PLAIN)
    assert shape == Shape(**fields)
    assert [r for r in skylaunch.RECIPES if shape.offers(r)] == offers


def test_the_per_system_shape_is_read_from_its_subcommand() -> None:
    """An older codex whose `codex sandbox` has only subcommands: its own help offers no
    recipe, names `macos`, and the subcommand's help has --config."""
    top = codexhelp.parse(_fake_help("sandbox_macos"))
    assert not codexhelp.recognised(codexhelp.shape_of(top, codexhelp.PLAIN))
    assert top.macos_subcommand() == "macos"
    sub = codexhelp.parse(_fake_help("sandbox_macos", "macos"))
    shape = codexhelp.shape_of(sub, ("sandbox", "macos"))
    assert shape == Shape(subcommand=("sandbox", "macos"), config="--config")


OLD_CLAP = """\
codex-sandbox
Run a program sandboxed

USAGE:
    codex sandbox [OPTIONS] [COMMAND]...

OPTIONS:
    -P <PROFILE>               Permission profile
    -p, --profile <PROFILE>    A profile of config.toml, not a permission profile
    -c <key=value>             One setting
            -c model=o3, say, is an example inside a description, not an option
        --sandbox-state-json=<JSON>
    -h, --help                 Print help information

SUBCOMMANDS:
    help    Print this message
"""


def test_older_clap_layout_and_short_only_options() -> None:
    """clap 3's upper-case headings, options with only a short name (spelt short, since that
    is all there is), `--name=<VALUE>` entries; a `-p, --profile` entry is not -P, and an
    example deep inside a description is not an entry."""
    shape = codexhelp.shape_of(codexhelp.parse(OLD_CLAP), codexhelp.PLAIN)
    assert shape == Shape(profile="-P", config="-c", state_json="--sandbox-state-json")
    wrong_p = "Options:\n  -P, --policy <X>  something else entirely\n"
    assert codexhelp.shape_of(codexhelp.parse(wrong_p), codexhelp.PLAIN).profile == ""


@pytest.mark.parametrize(
    "text",
    ["", "error: unexpected argument '--help' found\n", "Options:\n  -h, --help  Print help\n"],
)
def test_a_help_without_our_options_is_not_recognised(text: str) -> None:
    """Nothing we know: no recipe is offered (the probe then falls back to the assumed
    spellings)."""
    assert not codexhelp.recognised(codexhelp.shape_of(codexhelp.parse(text), codexhelp.PLAIN))


def test_each_shape_spells_each_recipe(tmp_path: Path) -> None:
    """Long names where the shape has them, the unix-socket allowance only where offered, the
    subcommand of the shape, and `--` before the client every time."""
    rt = _runtime(tmp_path)
    tail = ("--", str(rt.client), "mcp")
    long_profile = Shape(profile="--permissions-profile", config="--config")
    assert skylaunch.argv("permissions_profile", rt, long_profile) == (
        str(rt.codex), "sandbox", "--permissions-profile", ":danger-full-access", *tail,
    )  # fmt: skip
    combined = Shape(profile="-P", unix_socket="--allow-unix-socket")
    assert skylaunch.argv("permissions_profile", rt, combined) == (
        str(rt.codex), "sandbox", "-P", ":danger-full-access",
        "--allow-unix-socket", str(rt.ipc), *tail,
    )  # fmt: skip
    per_system = Shape(subcommand=("sandbox", "macos"), config="--config")
    assert skylaunch.argv("config_override", rt, per_system) == (
        str(rt.codex), "sandbox", "macos", "--config", 'sandbox_mode="danger-full-access"', *tail,
    )  # fmt: skip
    state = skylaunch.argv("sandbox_state", rt, Shape(state_json="--sandbox-state-json"))
    assert state[:3] == (str(rt.codex), "sandbox", "--sandbox-state-json") and state[4:] == tail
    # a pinned recipe this codex lacks is spelt the predecessor's way, for codex to refuse
    assert skylaunch.argv("permissions_profile", rt, per_system)[3:5] == (
        "-P",
        ":danger-full-access",
    )


def test_only_offered_recipes_are_tried_unless_pinned() -> None:
    """A recipe this codex has no option for is left out; memory reorders what is left; a pin
    is tried whatever the shape; a shape that offers nothing leaves every recipe in."""
    assert skylaunch.order("auto", "", ["config_override", "sandbox_state"]) == (
        ("config_override", "sandbox_state"),
        "default",
    )
    assert skylaunch.order("auto", "sandbox_state", ["config_override", "sandbox_state"]) == (
        ("sandbox_state", "config_override"),
        "remembered",
    )
    assert skylaunch.order("auto", "permissions_profile", ["config_override"]) == (
        ("config_override",),
        "default",
    )
    assert skylaunch.order("permissions_profile", "", ["config_override"]) == (
        ("permissions_profile",),
        "pinned",
    )
    assert skylaunch.order("auto", "", []) == (skylaunch.RECIPES, "default")


def test_the_cache_accepts_only_what_this_code_writes() -> None:
    """A cached shape is read back only when every word in it is one this code would put on
    codex's command line, and only when it was read (an assumed shape is never cached)."""
    good = Shape(subcommand=("sandbox", "macos"), config="--config", version="codex-cli 1")
    assert Shape.from_data(good.to_data()) == good
    assert Shape.from_data({**good.to_data(), "config": "--config=x; rm"}) is None
    assert Shape.from_data({**good.to_data(), "subcommand": ["sandbox", "linux"]}) is None
    assert Shape.from_data({**good.to_data(), "source": "assumed"}) is None
    assert Shape.from_data({**good.to_data(), "config": ""}) is None  # offers nothing
    assert Shape.from_data(ASSUMED.to_data()) is None
    assert Shape.from_data(["sandbox"]) is None


def test_working_dir_falls_back_to_the_folder_holding_the_service_app(tmp_path: Path) -> None:
    """Without $CODEX_HOME/computer-use, a client found inside an app's Codex Computer
    Use.app runs from the folder holding that app; backend.cwd and an existing
    $CODEX_HOME/computer-use win."""
    env = {"CODEX_HOME": str(tmp_path / "codex-home")}
    holder = tmp_path / "ChatGPT.app" / "Contents" / "Resources" / "sky"
    client = holder / skylaunch.CLIENT_IN_APP
    assert skylaunch.working_dir("", env, client) == holder
    assert skylaunch.working_dir("/elsewhere", env, client) == Path("/elsewhere")
    canonical = tmp_path / "codex-home" / "computer-use"
    assert skylaunch.working_dir("", env, tmp_path / "bin" / "client") == canonical
    canonical.mkdir(parents=True)
    assert skylaunch.working_dir("", env, client) == canonical
