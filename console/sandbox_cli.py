"""`redagent sandbox …`: the Docker sandbox's image (build, use) and leftover containers (prune).

A typer sub-app (registered by console/cli.py as `sandbox`). Errors take cli_common's one path: one
line on stderr, `error: …`, exit code 2.
"""

from __future__ import annotations

import typer

from redagent.console.cli_common import Commands, examples, fail, out, print_json, split

sandbox_app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    help="The Docker sandbox backend: its image and leftover containers.",
    epilog=examples("redagent sandbox image build", "redagent sandbox prune"),
)
image_app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    help="The image `run --sandbox docker` uses.",
    epilog=examples("redagent sandbox image build --with python", "redagent sandbox image use my-toolchain:latest"),
)
sandbox_app.add_typer(image_app, name="image")


def _say(text: str) -> None:
    out.print(text, markup=False, highlight=False)


@image_app.command("build", epilog=examples("redagent sandbox image build --with node,git"))
def build_cmd(
    extras: str = typer.Option("", "--with", help="toolchains to add: node, python, git (comma-separated)"),
    tag: str | None = typer.Option(None, "--tag", help="image tag (default: the project's image)"),
    force: bool = typer.Option(False, "--force", help="rebuild even if the labelled image exists"),
) -> None:
    """Build the default image locally: debootstrap --variant=minbase bookworm from this host's apt mirror,
    imported with `docker import` and labelled with the project's image version. No registry is used."""
    from redagent.sandbox.docker_backend import (
        DEFAULT_IMAGE,
        IMAGE_VERSION,
        build_image,
        built_as,
        check_extras,
        record_image,
    )

    chosen, wanted = tag or DEFAULT_IMAGE, tuple(sorted(set(split(extras))))
    check_extras(wanted)
    # Cached (CI builds once): the same version with the same extras is not built again.
    if not force and built_as(chosen, wanted):
        _say(
            f"{chosen} exists (image version {IMAGE_VERSION}, with {','.join(wanted) or 'no extras'}); "
            "--force rebuilds it"
        )
        return
    image_id = build_image(chosen, wanted)
    if tag:
        record_image(chosen)  # a tag of one's own is the one runs use from now on
    _say(f"built {chosen} ({image_id[:19]}), image version {IMAGE_VERSION}")


@image_app.command("use", epilog=examples("redagent sandbox image use my-toolchain:latest"))
def use_cmd(tag: str = typer.Argument(..., help="a local image with sh and python3 (e.g. your toolchain's)")) -> None:
    """Record TAG as the image `run --sandbox docker` uses without --image (any local image that can
    run the rtool shim: sh, sleep, python3)."""
    from redagent.sandbox.docker_backend import CHOSEN_IMAGE_FILE, image_problem, image_version, record_image

    version = image_version(tag)
    problem = image_problem(tag)
    if problem:
        fail(problem)
    record_image(tag)
    _say(
        f"runs with --sandbox docker now use {tag} (image version {version or 'unlabelled'}; "
        f"recorded in {CHOSEN_IMAGE_FILE})"
    )


@sandbox_app.command("prune", epilog=examples("redagent sandbox prune --run run-3fa2"))
def prune_cmd(
    run_id: str | None = typer.Option(None, "--run", help="only the containers of this run"),
    as_json: bool = typer.Option(False, "--json", help="print the removed container ids as JSON"),
) -> None:
    """Remove leftover sandbox containers (labelled with their run id), e.g. after a killed engine."""
    from redagent.sandbox.docker_backend import prune

    removed = prune(run_id)
    if as_json:
        print_json({"removed": removed})
    else:
        _say(f"removed {len(removed)} container(s)")
