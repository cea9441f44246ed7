"""`cudafit check` on Dockerfiles as people write them: an error only where the build would truly
go wrong. flash-attn downloads a prebuilt release asset before it compiles (CF019 only where the
data says it compiles); a RUN line is shell (comments, redirections, command substitutions); the
index comes from a variable or from pip's config as often as from a flag (CF001); uv takes a name
from the first index that has it (no CF006); heredoc bodies and the exec form are read too."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cudafit.check.dockerfile import read
from cudafit.cli import main

CU118 = "https://download.pytorch.org/whl/cu118"
CU121 = "https://download.pytorch.org/whl/cu121"
CU124 = "https://download.pytorch.org/whl/cu124"
UV = "COPY --from=ghcr.io/astral-sh/uv:0.5.4 /uv /bin/uv\n"


def check(tmp_path: Path, text: str, name: str = "Dockerfile") -> tuple[int, str]:
    path = tmp_path / name
    path.write_text(text)
    result = CliRunner().invoke(main, ["check", str(path)])
    return result.exit_code, result.stdout


def codes(out: str) -> set[str]:
    return {word for line in out.splitlines() for word in line.split()[1:2] if word.startswith("CF")}


# --- CF019: flash-attn compiles only where no release asset exists -----------------------------

DEVEL_11 = "FROM nvidia/cuda:11.8.0-devel-ubuntu22.04\nRUN apt-get update && apt-get install -y python3-pip git\n"


def test_flash_attn_that_downloads_its_asset_compiles_nothing(tmp_path: Path):
    # the asset cu12torch2.1cxx11abiFALSE exists (Pythons 3.9-3.11, x86_64): setup.py downloads it
    text = DEVEL_11 + f"RUN pip install torch==2.1.2 --index-url {CU121}\nRUN pip install ninja packaging && pip install flash-attn==2.7.3 --no-build-isolation\n"
    code, out = check(tmp_path, text)
    assert code == 0 and "CF019" not in out, out
    # where it would compile (aarch64 has no assets) is a note; the image's Python is Ubuntu 22.04's
    # python3 (3.10, installed with apt), which has one on x86_64
    assert "CF013 flash-attn 2.7.3 downloads its prebuilt wheel" in out and "but compiles on linux-aarch64: there" in out
    # a Python the file does not tell: every Python's (3.12 has no asset for torch 2.1)
    code, out = check(tmp_path, text.replace("python3-pip git", "git curl && curl -sL miniconda.sh | bash"))
    assert "compiles on linux-aarch64; linux-x86_64 with Python 3.12, 3.13" in out, out


def test_flash_attn_over_torch_from_pypi_downloads_its_asset_too(tmp_path: Path):
    text = DEVEL_11 + "RUN pip install torch==2.4.1\nRUN pip install packaging ninja wheel\nRUN pip install flash-attn==2.7.3 --no-build-isolation\n"
    code, out = check(tmp_path, text)
    assert code == 0 and "CF019" not in out, out


def test_a_release_the_data_lacks_is_no_evidence_of_a_compile(tmp_path: Path):
    text = DEVEL_11 + f"RUN pip install torch==2.1.2 --index-url {CU121}\nRUN pip install ninja packaging && pip install flash-attn==2.5.6 --no-build-isolation\n"
    code, out = check(tmp_path, text)
    assert code == 0 and "CF019" not in out and "flash-attn 2.5.6 is older than cudafit's data on flash-attn, which starts at 2.7.3" in out, out
    unpinned = text.replace("flash-attn==2.5.6", "flash-attn")  # whichever release is newest when the image is built
    code, out = check(tmp_path, unpinned)
    assert code == 0 and "CF019" not in out, out


def test_a_torch_newer_than_a_releases_recorded_assets_is_a_note(tmp_path: Path):
    # 2.7.3's recorded assets end at torch 2.6; a release gets assets for newer torch lines after it
    # (2.8.3's for torch 2.9 were, as real install scripts download them): no evidence of a compile
    text = DEVEL_11 + "RUN pip install torch==2.8.0 --index-url https://download.pytorch.org/whl/cu128\n"
    text += "RUN pip install ninja packaging && pip install flash-attn==2.7.3 --no-build-isolation\n"
    code, out = check(tmp_path, text)
    assert code == 0 and "CF019" not in out and "CF013 flash-attn 2.7.3: its release assets in cudafit's data serve torch up to 2.6" in out, out
    pypi_29 = DEVEL_11 + "RUN pip install torch==2.9.0\nRUN pip install flash-attn==2.8.3 --no-build-isolation\n"
    code, out = check(tmp_path, pypi_29)
    assert code == 0 and "CF019" not in out and "serve torch up to 2.8" in out, out


def test_flash_attn_without_an_asset_for_the_torch_compiles_with_the_images_nvcc(tmp_path: Path):
    # 2.8.3's assets are CUDA 12 builds for torch 2.4-2.8: torch 2.7.1+cu118 has none, so it compiles,
    # and nvcc 12.8 is refused for a CUDA 11 torch
    devel_12 = "FROM nvidia/cuda:12.8.1-devel-ubuntu24.04\nRUN apt-get update && apt-get install -y python3-pip git\n"
    text = devel_12 + "RUN pip install torch==2.7.1 --index-url https://download.pytorch.org/whl/cu118\n"
    text += "RUN pip install ninja packaging && pip install flash-attn==2.8.3 --no-build-isolation\n"
    code, out = check(tmp_path, text)
    assert code == 1 and "Dockerfile:1:6: CF019 the image's nvcc is CUDA 12.8 (nvidia/cuda:12.8.1-devel-ubuntu24.04), but flash-attn 2.8.3 has no" in out, out
    same = text.replace("12.8.1-devel-ubuntu24.04", "11.8.0-devel-ubuntu22.04")
    code, out = check(tmp_path, same)
    assert code == 0 and "CF019" not in out and "extension builder" not in out, out
    isolated = text.replace(" --no-build-isolation", "")
    assert "CF019" not in check(tmp_path, isolated)[1]


@pytest.mark.parametrize("mirror, fires", [
    ("docker.1ms.run/", True),  # a registry mirror of Docker Hub (kvcache-ai/ktransformers' Dockerfile pulls through one)
    ("docker.io/", True),
    ("localhost:5000/", True),
    ("nvcr.io/", True),
    ("ghcr.io/someone/", False),  # another repository of that name: not NVIDIA's image
])
def test_a_hub_image_pulled_through_a_mirror_is_the_hubs(tmp_path: Path, mirror: str, fires: bool):
    text = f"FROM {mirror}nvidia/cuda:12.8.1-devel-ubuntu24.04\n"
    text += "RUN pip install torch==2.7.1 --index-url https://download.pytorch.org/whl/cu118\n"
    text += "RUN pip install flash-attn==2.8.3 --no-build-isolation\n"
    assert ("CF019" in codes(check(tmp_path, text)[1])) == fires


def test_a_release_whose_assets_the_data_lacks_is_a_note(tmp_path: Path):
    # 2.8.3.post2's CI matrix was not readable: its assets are unknown, not absent
    text = DEVEL_11 + "RUN pip install torch==2.8.0 --index-url https://download.pytorch.org/whl/cu128\n"
    text += "RUN pip install ninja packaging && pip install flash-attn==2.8.3.post2 --no-build-isolation\n"
    code, out = check(tmp_path, text)
    assert code == 0 and "CF019" not in out and "CF013 flash-attn 2.8.3.post2: its release assets are not in cudafit's data" in out, out


def test_the_images_python_decides_whether_an_asset_exists(tmp_path: Path):
    from cudafit.check.image_rules import image_toolkit_differs
    from cudafit.loader import load

    path = tmp_path / "Dockerfile"
    path.write_text(DEVEL_11 + f"RUN pip install torch==2.1.2 --index-url {CU121} && pip install flash-attn==2.7.3 --no-build-isolation\n")
    doc, matrices = read(path), load()
    releases = {str(r.version): r for r in matrices.torch}
    # an image whose Python the assets cover (3.10) downloads on x86_64; aarch64 still compiles: a note
    (said,) = image_toolkit_differs(doc._replace(requires_python="==3.10.*"), matrices, releases)
    assert said.code == "CF013" and "compiles on linux-aarch64:" in said.message
    # no asset for torch 2.1 and Python 3.12 anywhere: it compiles on every platform
    (said,) = image_toolkit_differs(doc._replace(requires_python="==3.12.*"), matrices, releases)
    assert said.code == "CF019" and said.severity == "error"


# --- CF019: a Dockerfile's own compile (a setup script, a project built without isolation) -----

APEX = "RUN git clone https://github.com/NVIDIA/apex && cd apex && python3 setup.py install --cpp_ext --cuda_ext\n"
MISTRAL = "FROM --platform=amd64 nvcr.io/nvidia/cuda:11.8.0-devel-ubuntu22.04 as base\nRUN apt update && apt install -y python3-pip git\n"


def test_apex_compiled_against_pypis_torch_of_another_cuda_major(tmp_path: Path):
    # mistral-inference's deploy/Dockerfile of December 2023 (issues 54 and 76 of that repository)
    text = MISTRAL + 'RUN pip3 install "torch==2.1.0"\n' + APEX
    code, out = check(tmp_path, text)
    assert code == 1 and "Dockerfile:4:" in out and "CF019 `python3 setup.py install --cpp_ext --cuda_ext` compiles CUDA code" in out, out
    assert "(apex's --cuda_ext builds its CUDA kernels), with the image's nvcc, CUDA 11.8 (nvcr.io/nvidia/cuda:11.8.0-devel-ubuntu22.04)" in out
    assert "that torch is torch==2.1.0 from PyPI, a CUDA 12.1 build" in out and "on linux-x86_64" not in out  # the image is amd64 only
    # the fix the project made minutes later: PyPI's 2.0.0 is a CUDA 11.7 build
    assert "CF019" not in check(tmp_path, text.replace("torch==2.1.0", "torch==2.0.0"))[1]
    assert "CF019" not in check(tmp_path, text.replace('"torch==2.1.0"', f"torch==2.1.0 --index-url {CU118}"))[1]
    assert "CF019" not in check(tmp_path, text.replace("11.8.0-devel", "12.1.0-devel"))[1]
    # a runtime image has no nvcc; a torch installed after the compile is not what it compiled against
    assert "CF019" not in check(tmp_path, text.replace("11.8.0-devel", "11.8.0-runtime"))[1]
    assert "CF019" not in check(tmp_path, MISTRAL + APEX + 'RUN pip3 install "torch==2.1.0"\n')[1]


def test_one_run_line_installs_and_compiles_in_order(tmp_path: Path):
    before = MISTRAL + "RUN pip3 install torch==2.1.0 && cd apex && python3 setup.py install --cuda_ext\n"
    assert "CF019" in codes(check(tmp_path, before)[1])
    after = MISTRAL + "RUN cd apex && python3 setup.py install --cuda_ext && pip3 install torch==2.1.0\n"
    assert "CF019" not in codes(check(tmp_path, after)[1])


BUILDER = """FROM nvidia/cuda:12.1.0-devel-ubuntu22.04 as builder
RUN git clone --depth=1 https://github.com/oobabooga/GPTQ-for-LLaMa /build
WORKDIR /build
RUN python3 -m venv /build/venv && . /build/venv/bin/activate && \\
    pip3 install torch torchvision torchaudio --index-url https://download.pytorch.org/whl/cu118 && \\
    pip3 install -r requirements.txt
ARG TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-7.0;7.5;8.0;8.6+PTX}"
RUN . /build/venv/bin/activate && \\
    python3 setup_cuda.py bdist_wheel -d .

FROM nvidia/cuda:12.1.0-runtime-ubuntu22.04
COPY --from=builder /build /app/repositories/GPTQ-for-LLaMa
RUN pip3 install torch --index-url https://download.pytorch.org/whl/cu118 && pip3 install /app/repositories/GPTQ-for-LLaMa/*.whl
"""


def test_a_builder_stage_compiles_with_its_own_images_nvcc(tmp_path: Path):
    # text-generation-webui's docker/Dockerfile of October 2023: the image that runs has no nvcc
    code, out = check(tmp_path, BUILDER)
    assert code == 1 and "Dockerfile:9:5: CF019 `python3 setup_cuda.py bdist_wheel -d .` compiles CUDA code" in out, out
    assert "(TORCH_CUDA_ARCH_LIST is set for it, which only a CUDA extension build reads)" in out and "CUDA 12.1 (nvidia/cuda:12.1.0-devel-ubuntu22.04)" in out
    assert "that torch is torch from https://download.pytorch.org/whl/cu118, a CUDA 11.8 build" in out
    assert "CF019" not in check(tmp_path, BUILDER.replace("whl/cu118", "whl/cu121"))[1]  # the fix the project made that day
    # nothing says the script compiles CUDA code for torch: no claim
    assert "CF019" not in check(tmp_path, BUILDER.replace("ARG TORCH_CUDA_ARCH_LIST", "ARG OTHER"))[1]


def test_a_stage_built_from_a_named_stage_holds_its_torch(tmp_path: Path):
    text = 'FROM nvidia/cuda:11.8.0-devel-ubuntu22.04 AS env_base\nRUN pip3 install "torch==2.1.0"\n'
    text += "FROM env_base AS app_base\nARG TORCH_CUDA_ARCH_LIST=8.6\nRUN cd /app/gptq && python3 setup_cuda.py install\n"
    text += "FROM nvidia/cuda:11.8.0-runtime-ubuntu22.04\nCOPY --from=app_base /venv /venv\n"
    code, out = check(tmp_path, text)
    assert code == 1 and "Dockerfile:5:" in out and "CF019" in out, out
    # on both architectures, PyPI's 2.1.0 is a CUDA build on x86_64 only: the error names it
    assert "that torch on linux-x86_64 is torch==2.1.0 from PyPI" in out


@pytest.mark.parametrize("run, fires", [
    ("FORCE_CUDA=1 pip install --no-build-isolation -e .", True),
    ("FORCE_CUDA=0 pip install --no-build-isolation -e .", False),
    ("export TORCH_CUDA_ARCH_LIST=8.0 && pip install --no-build-isolation .", True),
    ("TORCH_CUDA_ARCH_LIST=8.0 pip install .", False),  # isolated: the build gets a torch of its own
    ("TORCH_CUDA_ARCH_LIST=8.0 pip install --no-build-isolation ./dist/x-1.0-cp310-cp310-linux_x86_64.whl", False),  # a wheel compiles nothing
    ("python3 setup.py install", False),  # nothing says it is CUDA code
    ("TORCH_CUDA_ARCH_LIST=8.0 python3 setup.py develop", True),
    ("TORCH_CUDA_ARCH_LIST=8.0 python3 setup.py sdist", False),  # no compile
])
def test_what_says_a_build_compiles_cuda_code(tmp_path: Path, run: str, fires: bool):
    text = MISTRAL + "RUN pip3 install torch==2.1.0\nWORKDIR /src/ext\nRUN " + run + "\n"
    assert ("CF019" in codes(check(tmp_path, text)[1])) == fires


def test_flash_attention_built_as_a_wheel_may_download_its_release_asset(tmp_path: Path):
    clone = MISTRAL + "ENV TORCH_CUDA_ARCH_LIST=8.0\nRUN pip3 install torch==2.1.0\nRUN git clone https://github.com/Dao-AILab/flash-attention && cd flash-attention && "
    assert "CF019" not in codes(check(tmp_path, clone + "pip install --no-build-isolation .\n")[1])
    assert "CF019" in codes(check(tmp_path, clone + "FLASH_ATTENTION_FORCE_BUILD=TRUE pip install --no-build-isolation .\n")[1])
    assert "CF019" in codes(check(tmp_path, clone + "python setup.py install\n")[1])  # setup.py install compiles: no download there


@pytest.mark.parametrize("torch, image, fires", [
    ('"torch>=2.0.0"', "11.8.0", True),  # every Python's newest release from 2.0 on is a CUDA 12 or 13 build
    ("torch", "11.8.0", True),  # Ubuntu 22.04's python3 (3.10, apt) takes 2.14.1, a CUDA 13.0 build
    ("torch", "12.1.0", True),
    ('"torch<2.1"', "11.8.0", False),  # 2.0.1, CUDA 11.7
    ('"torch>=2.11"', "12.8.1", True),  # CUDA 13 builds, and any later release only moves up
    ('"torch>=2.11"', "13.0.0", False),
    ('"torch<2.9"', "13.0.0", True),  # every release below 2.9 is a CUDA 12 build or older: no later one can come
    ('"torch>=2.7,<2.9"', "12.8.1", False),  # 2.8.0 is a CUDA 12.8 build
])
def test_a_torch_range_is_each_pythons_newest_release(tmp_path: Path, torch: str, image: str, fires: bool):
    text = MISTRAL.replace("11.8.0", image) + f"RUN pip3 install {torch}\n" + APEX
    assert ("CF019" in codes(check(tmp_path, text)[1])) == fires


def test_an_index_cudafit_cannot_read_leaves_the_torch_unknown(tmp_path: Path):
    configured = MISTRAL + "COPY pip.conf /etc/pip.conf\nRUN pip3 install torch==2.1.0\n" + APEX
    assert "CF019" not in codes(check(tmp_path, configured)[1])
    extra = MISTRAL + f"RUN pip3 install torch==2.1.0 --extra-index-url {CU118}\n" + APEX  # pip takes the highest of both
    assert "CF019" not in codes(check(tmp_path, extra)[1])
    computed = MISTRAL + "RUN pip3 install torch==2.1.0 --index-url $(cat /index)\n" + APEX
    assert "CF019" not in codes(check(tmp_path, computed)[1])
    for setting in (f"ENV PIP_INDEX_URL={CU118}\n", f"ARG PIP_EXTRA_INDEX_URL={CU118}\n", f"RUN pip config set global.index-url {CU118}\n"):
        assert "CF019" not in codes(check(tmp_path, MISTRAL + setting + "RUN pip3 install torch==2.1.0\n" + APEX)[1]), setting


def test_an_unpinned_torch_over_a_pytorch_image_leaves_its_own(tmp_path: Path):
    text = "FROM pytorch/pytorch:2.1.0-cuda11.8-cudnn8-devel\nRUN pip install torch\n" + APEX
    assert "CF019" not in codes(check(tmp_path, text)[1])
    pinned = "FROM pytorch/pytorch:2.1.0-cuda11.8-cudnn8-devel\nRUN pip install torch==2.1.0\n" + APEX
    assert "CF019" in codes(check(tmp_path, pinned)[1])


def test_a_platform_flag_without_an_os_names_the_architecture(tmp_path: Path):
    for flag, platforms in (("amd64", ("linux-x86_64",)), ("linux/arm64", ("linux-aarch64",)), ("linux/arm64/v8", ("linux-aarch64",))):
        path = tmp_path / "Dockerfile"
        path.write_text(f"FROM --platform={flag} nvidia/cuda:12.1.0-devel-ubuntu22.04\nRUN pip install torch==2.5.1\n")
        assert read(path).platforms == platforms


# --- shell syntax is not a requirement ----------------------------------------------------------

PY310 = "FROM python:3.10-slim\n"


@pytest.mark.parametrize(
    "run",
    [
        "RUN pip install torch==2.0.1 torchvision==0.15.2  # pinned for CUDA 11.7",
        "RUN pip install torch==2.0.1 torchvision==0.15.2  # don't upgrade",
        "RUN pip install torch==2.0.1 torchvision==0.15.2 > /dev/null 2>&1",
        "RUN pip install torch==2.0.1 torchvision==0.15.2 2>/dev/null >>/tmp/log",
        "RUN pip install torch==2.0.1 torchvision==0.15.2 &>/dev/null || true",
        "RUN pip install torch==2.0.1 torchvision==0.15.2 | tee /tmp/log",
        "RUN pip install torch==2.0.1 torchvision==0.15.2 |& tee /tmp/log",
        "RUN pip install torch==2.0.1 torchvision==0.15.2 < /dev/null",
        "RUN (cd /tmp && pip install torch==2.0.1 torchvision==0.15.2)",
        "RUN pip install torch==2.0.1 torchvision==0.15.2;pip cache purge",
        'RUN sh -c "pip install torch==2.0.1 torchvision==0.15.2 > /dev/null"',
    ],
)
def test_comments_and_redirections_end_the_requirements(tmp_path: Path, run: str):
    code, out = check(tmp_path, PY310 + run + "\n")
    assert code == 0 and "CF000" not in out, out
    assert {p.name for p in read(tmp_path / "Dockerfile").pins} == {"torch", "torchvision"}


def test_a_requirement_before_a_comment_is_still_checked(tmp_path: Path):
    code, out = check(tmp_path, PY310 + "RUN pip install torch==2.0.1+cu118  # the CUDA 11.8 build\n")
    assert code == 1 and "CF001" in out and "CF000" not in out, out


def test_a_url_fragment_is_no_comment(tmp_path: Path):
    # shlex would end the line at `#egg=`, losing the --index-url after it
    run = f'RUN pip install torch==2.0.1+cu118 "git+https://github.com/facebookresearch/detectron2.git#egg=detectron2" --index-url {CU118}\n'
    code, out = check(tmp_path, PY310 + run)
    assert code == 0 and not codes(out) & {"CF000", "CF001"}, out


@pytest.mark.parametrize(
    "run",
    [
        "RUN pip install $(echo torch==2.0.1) torchvision==0.15.2",
        'RUN pip install "$(cat /tmp/torch.txt)" torchvision==0.15.2',
        "RUN pip install `echo torch==2.0.1` torchvision==0.15.2",
        "RUN pip install torch==2.0.$(echo 1) torchvision==0.15.2",
        "RUN pip install $(echo torch==2.0.1)+cu118 torchvision==0.15.2",
    ],
)
def test_a_command_substitution_is_passed_over_with_a_note(tmp_path: Path, run: str):
    code, out = check(tmp_path, PY310 + run + "\n")
    assert code == 0 and "CF000" not in out and "is computed by the shell" in out and "CF013" in out, out
    assert [p.name for p in read(tmp_path / "Dockerfile").pins] == ["torchvision"]


def test_an_index_the_shell_computes_leaves_its_install_unchecked_with_a_note(tmp_path: Path):
    run = "RUN pip install torch==2.0.1+cu118 --index-url https://download.pytorch.org/whl/cu$(nvcc --version | sed -n 's/.*release \\([0-9]*\\).*/\\1/p')\n"
    code, out = check(tmp_path, PY310 + run)
    assert code == 0 and not codes(out) & {"CF000", "CF001"} and "CF013" in out, out


# --- CF001: the index set without a flag -------------------------------------------------------


@pytest.mark.parametrize(
    "runs",
    [
        [f"RUN PIP_INDEX_URL={CU118} pip install torch==2.0.1+cu118"],
        [f"RUN env PIP_INDEX_URL={CU118} python3 -m pip install torch==2.0.1+cu118 torchvision==0.15.2+cu118"],
        [f"RUN export PIP_INDEX_URL={CU118} && pip install torch==2.0.1+cu118"],
        [f"RUN pip config set global.index-url {CU118}", "RUN pip install torch==2.0.1+cu118"],
        [f"RUN pip config set global.index-url {CU118} && pip install torch==2.0.1+cu118"],
        [f"RUN pip3 config --global set install.index-url {CU118}", "RUN pip3 install --no-cache-dir torch==2.0.1+cu118"],
        [f"RUN UV_INDEX_URL={CU118} uv pip install --system torch==2.0.1+cu118"],
        [f"RUN UV_EXTRA_INDEX_URL={CU118} uv pip install --system torch==2.0.1+cu118"],
        [f"RUN UV_INDEX=pytorch={CU118} uv pip install --system torch==2.0.1+cu118"],
        [f"RUN UV_DEFAULT_INDEX={CU118} uv pip install --system torch==2.0.1+cu118"],
    ],
)
def test_an_index_from_a_variable_or_pips_config_serves_the_pin(tmp_path: Path, runs: list[str]):
    code, out = check(tmp_path, PY310 + UV + "\n".join(runs) + "\n")
    assert code == 0 and "CF001" not in out, out


def test_an_index_in_the_config_of_a_stage_the_image_builds_on(tmp_path: Path):
    text = f"FROM python:3.10-slim AS base\nRUN pip config set global.index-url {CU118}\nFROM base\nRUN pip install torch==2.0.1+cu118\n"
    code, out = check(tmp_path, text)
    assert code == 0, out


@pytest.mark.parametrize(
    "runs",
    [
        # uv reads neither PIP_* variables nor pip.conf: the pin finds no index
        [f"RUN PIP_INDEX_URL={CU118} uv pip install --system torch==2.0.1+cu118"],
        [f"RUN pip config set global.index-url {CU118}", "RUN uv pip install --system torch==2.0.1+cu118"],
        # pip's config after the install, or in a stage the image does not build on
        ["RUN pip install torch==2.0.1+cu118", f"RUN pip config set global.index-url {CU118}"],
        # an assignment is the environment of its own command only
        [f"RUN PIP_INDEX_URL={CU118} pip download torch && pip install torch==2.0.1+cu118"],
    ],
)
def test_an_index_pip_or_uv_does_not_read_is_no_index(tmp_path: Path, runs: list[str]):
    code, out = check(tmp_path, PY310 + UV + "\n".join(runs) + "\n")
    assert code == 1 and "CF001" in out, out


def test_pips_config_in_a_build_stage_the_image_does_not_build_on_is_not_the_images(tmp_path: Path):
    text = f"FROM python:3.10-slim AS build\nRUN pip config set global.index-url {CU118}\nFROM python:3.10-slim\nRUN pip install torch==2.0.1+cu118\n"
    code, out = check(tmp_path, text)
    assert code == 1 and "CF001" in out, out


def test_an_extra_index_in_pips_config_is_pips_extra_index(tmp_path: Path):
    text = PY310 + f"RUN pip config set global.extra-index-url {CU118}\nRUN pip install torch==2.0.1+cu118\n"
    code, out = check(tmp_path, text)
    assert code == 1 and "CF001" not in out and "Dockerfile:2:43: CF006" in out, out


# --- CF006: uv takes a name from the first index that has it -----------------------------------

PY311 = "FROM python:3.11-slim\n" + UV


@pytest.mark.parametrize(
    "text",
    [
        PY311 + f"RUN uv pip install --system torch==2.5.1+cu124 --extra-index-url {CU124}\n",
        PY311 + f"RUN uv pip install --system --extra-index-url={CU124} torch==2.5.1+cu124\n",
        PY311 + f"RUN uv pip install --system --index {CU124} torch==2.5.1+cu124\n",
        PY311 + f"ENV UV_EXTRA_INDEX_URL={CU124}\nRUN uv pip install --system torch==2.5.1+cu124\n",
        PY311 + f"ENV UV_INDEX={CU124}\nRUN uv pip install --system torch==2.5.1+cu124\n",
        PY311 + f"RUN --mount=type=cache,target=/root/.cache/uv UV_EXTRA_INDEX_URL={CU124} uv pip install --system torch==2.5.1+cu124\n",
    ],
)
def test_uvs_extra_index_is_no_dependency_confusion(tmp_path: Path, text: str):
    code, out = check(tmp_path, text)
    assert code == 0 and not codes(out) & {"CF006", "CF001"}, out


@pytest.mark.parametrize(
    "text",
    [
        PY311 + f"RUN uv pip install --system --index-strategy unsafe-best-match torch==2.5.1+cu124 --extra-index-url {CU124}\n",
        PY311 + f"RUN uv pip install --system --index-strategy=unsafe-best-match torch==2.5.1+cu124 --extra-index-url {CU124}\n",
        PY311 + f"ENV UV_INDEX_STRATEGY=unsafe-best-match UV_EXTRA_INDEX_URL={CU124}\nRUN uv pip install --system torch==2.5.1+cu124\n",
        PY311 + f"RUN UV_INDEX_STRATEGY=unsafe-best-match uv pip install --system torch==2.5.1+cu124 --extra-index-url {CU124}\n",
        # pip takes the highest version from any index
        PY311 + f"RUN pip install torch==2.5.1+cu124 --extra-index-url {CU124}\n",
        PY311 + f"ENV PIP_EXTRA_INDEX_URL={CU124}\nRUN pip install torch==2.5.1+cu124\n",
        PY311 + f"RUN PIP_EXTRA_INDEX_URL={CU124} pip install torch==2.5.1+cu124\n",
    ],
)
def test_pip_and_uvs_best_match_still_warn(tmp_path: Path, text: str):
    code, out = check(tmp_path, text)
    assert code == 1 and "CF006" in out and "CF001" not in out, out


def test_requirements_and_pyproject_keep_their_extra_index_rules(tmp_path: Path):
    # a requirements file may be read by pip: its --extra-index-url still warns
    code, out = check(tmp_path, f"--extra-index-url {CU124}\ntorch==2.5.1+cu124\n", "requirements.txt")
    assert code == 1 and "CF006" in out, out
    pyproject = (
        '[project]\nname = "x"\nversion = "0"\nrequires-python = ">=3.11"\ndependencies = ["torch==2.5.1"]\n'
        f'[[tool.uv.index]]\nname = "pytorch"\nurl = "{CU124}"\nexplicit = true\n'
        '[tool.uv.sources]\ntorch = { index = "pytorch" }\n'
    )
    code, out = check(tmp_path, pyproject, "pyproject.toml")
    assert "CF006" not in out, out


# --- heredocs and the exec form are read --------------------------------------------------------


def test_a_heredoc_body_is_read_as_shell(tmp_path: Path):
    text = "# syntax=docker/dockerfile:1.4\nFROM python:3.11-slim\nRUN <<EOT\nset -e\npip install --no-cache-dir torch==2.2.2+cu121\nEOT\n"
    code, out = check(tmp_path, text)
    assert code == 1 and "Dockerfile:5:28: CF001 torch==2.2.2+cu121" in out, out
    fixed = text.replace("torch==2.2.2+cu121", f"torch==2.2.2+cu121 --index-url {CU121} \\\n    torchvision==0.17.2+cu121  # the pair")
    code, out = check(tmp_path, fixed)
    assert code == 0, out
    assert {p.name for p in read(tmp_path / "Dockerfile").pins} == {"torch", "torchvision"}


def test_a_heredoc_a_shell_reads_is_read_and_tabs_are_dropped(tmp_path: Path):
    text = "FROM python:3.11-slim\nRUN <<-EOT bash\n\tpip install torch==2.0.1+cu118\n\tEOT\nRUN pip install numpy\n"
    code, out = check(tmp_path, text)
    assert code == 1 and "Dockerfile:3:14: CF001" in out, out
    assert {p.name for p in read(tmp_path / "Dockerfile").pins} == {"torch", "numpy"}


@pytest.mark.parametrize(
    "run",
    [
        "RUN python3 <<EOF\nfrom torch import cuda\nprint('torch==9.9.9+cu999')\nEOF\n",
        "RUN <<EOF\n#!/usr/bin/env python3\nfrom torch import cuda\nEOF\n",
        "RUN cat <<EOF > /tmp/requirements.txt\ntorch==9.9.9+cu999\nEOF\n",
    ],
)
def test_a_heredoc_for_another_program_is_not_the_shells(tmp_path: Path, run: str):
    text = "FROM python:3.11-slim\n" + run + "RUN pip install numpy\n"
    code, out = check(tmp_path, text)
    assert code == 0, out
    doc = read(tmp_path / "Dockerfile")
    # `from torch import cuda` is the body's, not a FROM: the image is still python:3.11-slim
    assert [p.name for p in doc.pins] == ["numpy"] and doc.images[-1][0] == "python:3.11-slim"


def test_the_exec_form_is_read(tmp_path: Path):
    code, out = check(tmp_path, PY310 + 'RUN ["pip", "install", "torch==2.0.1+cu118"]\n')
    assert code == 1 and "Dockerfile:2:25: CF001" in out, out
    code, out = check(tmp_path, PY310 + f'RUN ["pip", "install", "torch==2.0.1+cu118", "--index-url", "{CU118}"]\n')
    assert code == 0, out
    code, out = check(tmp_path, PY310 + 'RUN ["/bin/sh", "-c", "pip install torch==2.0.1+cu118 > /dev/null"]\n')
    assert code == 1 and "CF001" in out and "CF000" not in out, out
    # no shell: a variable is pip's literal text, passed over
    code, out = check(tmp_path, PY310 + 'ARG V=2.0.1\nRUN ["pip", "install", "torch==$V+cu118"]\n')
    assert code == 0 and "CF000" not in out, out


def test_a_later_install_replaces_or_keeps_what_an_earlier_one_left(tmp_path: Path):
    # two commands run one after the other: not one set of requirements that must agree (CF017)
    replaced = "FROM python:3.10-slim\nRUN pip install torch==2.5.1\nRUN pip install --index-url https://download.pytorch.org/whl/cu118 torch==2.0.1+cu118\n"
    path = tmp_path / "Dockerfile"
    path.write_text(replaced)
    result = CliRunner().invoke(main, ["check", str(path)])
    assert "CF017" not in result.stdout, result.stdout
    kept = "FROM python:3.10-slim\nRUN pip install torch==2.5.1\nRUN pip install 'torch>=2.0'\n"
    path.write_text(kept)
    assert "CF017" not in CliRunner().invoke(main, ["check", str(path)]).stdout
    one_command = "FROM python:3.10-slim\nRUN pip install torch==2.5.1 torch==2.0.1\n"
    path.write_text(one_command)
    assert "CF017" in CliRunner().invoke(main, ["check", str(path)]).stdout  # within one install they must agree


@pytest.mark.parametrize(
    "line",
    [
        "COPY pip.conf /etc/pip.conf",
        "COPY config/uv.toml /etc/uv/uv.toml",
        "RUN --mount=type=secret,id=pipconf,target=/root/.config/pip/pip.conf pip install torch==2.0.1+cu118",
        "ENV PIP_CONFIG_FILE=/cfg/pip.conf",
    ],
)
def test_a_configuration_file_the_image_is_given_may_name_the_index(tmp_path: Path, line: str):
    # pip or uv reads an index from a file not read here: where the +cu118 pin comes from is unknown, so no CF001
    path = tmp_path / "Dockerfile"
    path.write_text(f"FROM python:3.10-slim\n{line}\nRUN pip install torch==2.0.1+cu118\n")
    assert "CF001" not in CliRunner().invoke(main, ["check", str(path)]).stdout
    path.write_text("FROM python:3.10-slim\nCOPY requirements.txt .\nRUN pip install torch==2.0.1+cu118\n")
    assert "CF001" in CliRunner().invoke(main, ["check", str(path)]).stdout


@pytest.mark.parametrize(
    ("where", "name", "text"),
    [
        ("", "uv.toml", f'[[index]]\nurl = "{CU118}"\n'),
        ("", "pyproject.toml", f'[project]\nname = "x"\n\n[tool.uv]\nextra-index-url = ["{CU118}"]\n'),
        ("..", "pyproject.toml", f'[project]\nname = "x"\n\n[tool.uv.pip]\nindex-url = "{CU118}"\n'),
    ],
)
def test_a_build_context_copied_whole_may_bring_a_uv_index(tmp_path: Path, where: str, name: str, text: str):
    # uv reads uv.toml or [tool.uv] from the folder it runs in: `COPY . .` may bring one that names the index
    (tmp_path / ".git").mkdir()
    folder = tmp_path / "docker"
    folder.mkdir()
    (folder / where / name).write_text(text)
    path = folder / "Dockerfile"
    path.write_text("FROM python:3.10-slim\nWORKDIR /app\nCOPY . .\nRUN uv pip install --system torch==2.0.1+cu118\n")
    assert "CF001" not in CliRunner().invoke(main, ["check", str(path)]).stdout
    # copying a part of the context, or from another stage, brings no configuration
    for line in ("COPY requirements.txt .", "COPY --from=build . ."):
        path.write_text(f"FROM python:3.10-slim AS build\nFROM python:3.10-slim\n{line}\nRUN uv pip install --system torch==2.0.1+cu118\n")
        assert "CF001" in CliRunner().invoke(main, ["check", str(path)]).stdout, line


def test_a_context_whose_uv_configuration_names_no_index_changes_nothing(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.uv]\ndev-dependencies = []\n')
    path = tmp_path / "Dockerfile"
    path.write_text("FROM python:3.10-slim\nCOPY . .\nRUN uv pip install --system torch==2.0.1+cu118\n")
    assert "CF001" in CliRunner().invoke(main, ["check", str(path)]).stdout


@pytest.mark.parametrize(
    ("text", "aarch64"),
    [
        ("FROM python:3.12-slim\nRUN pip install decord==0.6.0\n", True),
        ("FROM --platform=linux/amd64 python:3.12-slim\nRUN pip install decord==0.6.0\n", False),
        # opendilab/LightRFT's shape: an x86_64 wheel installed by URL: the image is built on x86_64 only
        (
            "FROM python:3.12-slim\nRUN pip install decord==0.6.0 && pip install "
            "https://github.com/Dao-AILab/flash-attention/releases/download/v2.8.3/flash_attn-2.8.3+cu12torch2.9cxx11abiTRUE-cp312-cp312-linux_x86_64.whl\n",
            False,
        ),
        # wheels for both architectures (chosen by uname -m): both are built
        ("FROM python:3.12-slim\nRUN pip install decord==0.6.0 ./w/x-1.0-cp312-cp312-linux_x86_64.whl || pip install ./w/x-1.0-cp312-cp312-manylinux_2_28_aarch64.whl\n", True),
        ("FROM --platform=$BUILDPLATFORM python:3.12-slim\nRUN pip install decord==0.6.0\n", True),
    ],
)
def test_the_architectures_an_image_is_built_for(tmp_path: Path, text: str, aarch64: bool):
    # decord has no aarch64 wheel: CF015 there only where the image may be built there
    code, out = check(tmp_path, text)
    assert ("CF015 on linux-aarch64" in out) == aarch64, out


def test_a_context_uv_configuration_is_nothing_to_pip(tmp_path: Path):
    # pip reads no uv.toml: a Dockerfile that runs only pip still needs the index
    (tmp_path / ".git").mkdir()
    (tmp_path / "uv.toml").write_text(f'[[index]]\nurl = "{CU118}"\n')
    path = tmp_path / "Dockerfile"
    path.write_text("FROM python:3.10-slim\nCOPY . .\nRUN pip install torch==2.0.1+cu118\n")
    assert "CF001" in CliRunner().invoke(main, ["check", str(path)]).stdout
    path.write_text('FROM python:3.10-slim\nCOPY [".", "/app"]\nWORKDIR /app\nRUN uv pip install --system torch==2.0.1+cu118\n')  # the JSON form
    assert "CF001" not in CliRunner().invoke(main, ["check", str(path)]).stdout


def test_a_wheel_chosen_by_the_machines_architecture_leaves_both_built(tmp_path: Path):
    text = (
        "FROM python:3.12-slim\nRUN pip install decord==0.6.0\n"
        'RUN if [ "$(uname -m)" = x86_64 ]; then pip install ./w/x-1.0-cp312-cp312-linux_x86_64.whl; fi\n'
    )
    code, out = check(tmp_path, text)
    assert "CF015 on linux-aarch64" in out, out


def test_flash_attn_compiles_where_its_ci_builds_no_asset(tmp_path: Path):
    # flash-attn's release assets are x86_64 builds: on an arm64 image it compiles, whatever torch
    text = "FROM --platform=linux/arm64 nvidia/cuda:11.8.0-devel-ubuntu22.04\nRUN pip install torch==2.9.0\nRUN pip install flash-attn==2.8.3 --no-build-isolation\n"
    code, out = check(tmp_path, text)
    assert code == 1 and "CF019" in out, out


def test_unpinned_torch_names_the_release_the_images_python_gets(tmp_path: Path):
    # PyPI's torch 2.15.0 needs Python 3.11: a python:3.10 image installs 2.14.1 (CUDA 13.0)
    code, out = check(tmp_path, "FROM python:3.10-slim\nRUN pip install torch\n")
    assert "CF008 'torch' installs torch 2.14.1 from PyPI on Linux, a CUDA 13.0 build" in out, out
    code, out = check(tmp_path, "FROM python:3.12-slim\nRUN pip install torch\n")
    assert "CF008 'torch' installs torch 2.15.0 from PyPI on Linux" in out, out


def test_unpinned_torch_beside_an_older_pytorch_extra_index_is_pypi_s_with_pip(tmp_path: Path):
    # coqui TTS's shape: pip takes PyPI's 2.15.0 over the cu118 index's newest (2.7.1+cu118);
    # uv's first-index strategy takes the cu118 index's build
    code, out = check(tmp_path, "FROM python:3.11\nRUN pip install torch torchaudio --extra-index-url https://download.pytorch.org/whl/cu118\n")
    assert "CF008 'torch' installs torch 2.15.0 from PyPI on Linux (pip takes the highest version from any index" in out, out
    code, out = check(tmp_path, "FROM python:3.11\nRUN uv pip install --system torch --extra-index-url https://download.pytorch.org/whl/cu118\n")
    assert "CF008" not in out, out


@pytest.mark.parametrize("text, kinds", [
    ("pip install torch==2.1.0 && cd apex && python3 setup.py install --cuda_ext", ["Install", "SetupBuild"]),
    ("sh -c 'python setup.py develop; pip install x'", ["SetupBuild", "Install"]),
    ("/opt/venv/bin/python3.10 setup_cuda.py bdist_wheel -d dist", ["SetupBuild"]),
    ("python setup.py sdist && python setup.py --version", []),  # nothing compiles
    ("python -m pip install -e . --no-build-isolation", ["Install"]),
    ("python train.py install", []),  # not a setup script
])
def test_the_shell_steps_of_a_run_line_in_order(text: str, kinds: list[str]):
    from cudafit.check.shell_installs import steps

    assert [type(step).__name__ for step in steps(text, {})] == kinds


def test_an_editable_install_and_its_environment_are_kept():
    from cudafit.check.shell_installs import installs

    (install,) = installs("export A=1 && FORCE_CUDA=1 pip install --no-build-isolation -e ./ext", {})
    assert install.editable == ["./ext"] and install.build_here and install.env == {"A": "1", "FORCE_CUDA": "1"}


@pytest.mark.parametrize("python, image, fires", [
    ("RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-dev\n", "12.8.1-devel-ubuntu22.04", True),
    ("RUN apt-get install -y python3-pip\n", "13.0.0-devel-ubuntu24.04", False),  # 3.12 takes 2.15.0, a CUDA 13.2 build
    ("RUN apt-get install -y python3-pip\n", "11.8.0-devel-ubuntu18.04", False),  # no data on 18.04's python3: each Python's newest
    # another Python than the distribution's: not told, so each Python's newest (3.8 takes 2.4.1, a CUDA 12.1 build)
    ("RUN apt-get install -y python3-pip && conda install -y python=3.11\n", "12.8.1-devel-ubuntu22.04", False),
    ("RUN add-apt-repository ppa:deadsnakes/ppa && apt-get install -y python3.11 python3-pip\n", "12.8.1-devel-ubuntu22.04", False),
    ("RUN apt-get install -y git\n", "12.8.1-devel-ubuntu22.04", False),  # no python3 installed here: not told
])
def test_an_apt_python3_is_the_images_python(tmp_path: Path, python: str, image: str, fires: bool):
    """An nvidia/cuda image has no Python: `apt-get install python3` gives its Ubuntu's (22.04: 3.10,
    the data's cuda-images.toml), and an unpinned torch is that Python's newest release."""
    text = f"FROM nvidia/cuda:{image}\n{python}RUN pip3 install torch\nENV TORCH_CUDA_ARCH_LIST=8.0\nRUN pip3 install --no-build-isolation .\n"
    code, out = check(tmp_path, text)
    assert ("CF019" in codes(out)) == fires, out
    if fires:
        assert "whose newest release for the image's Python 3.10 (Ubuntu 22.04's python3, installed with apt) is 2.14.1, a CUDA 13.0 build" in out


def test_a_python_named_by_version_must_be_the_distributions(tmp_path: Path):
    """text-generation-webui copies from /app/venv/lib/python3.10/: that is Ubuntu 22.04's python3, so
    the image's Python stays known; a python3.11 package makes it another."""
    base = "FROM nvidia/cuda:12.8.1-devel-ubuntu22.04\nRUN apt-get install -y python3-pip\nRUN pip3 install torch\n"
    same = base + "RUN cp /usr/local/lib/python3.10/dist-packages/x.so /tmp/\n"
    assert "installs torch 2.14.1 from PyPI" in check(tmp_path, same)[1]  # CF008 names 3.10's newest
    other = base + "RUN apt-get install -y python3.11\n"
    assert "installs torch 2.15.0 from PyPI" in check(tmp_path, other)[1]  # not told: the newest of any


def test_an_image_published_for_x86_64_alone_is_built_there_alone(tmp_path: Path):
    # pytorch/pytorch's tags are amd64 only (matrices/cuda-images.toml [[repository]]): docker build
    # stops at FROM on arm64, and decord's missing arm64 wheel is nothing the file meets there.
    rc, out = check(tmp_path, "FROM pytorch/pytorch:2.8.0-cuda12.8-cudnn9-devel\nRUN pip install decord==0.6.0\n")
    assert rc == 0 and "CF015" not in codes(out), out
    # nvidia/cuda's 12.8.1 on 24.04 is published for arm64 too: there it fails
    rc, out = check(tmp_path, "FROM nvidia/cuda:12.8.1-devel-ubuntu24.04\nRUN pip install decord==0.6.0\n")
    assert rc == 1 and "CF015 on linux-aarch64" in out, out


def test_published_platforms_come_from_the_data():
    from cudafit.check.image_platforms import narrowed, published_platforms
    from cudafit.loader import load

    m = load()
    assert published_platforms(m, "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-devel") == ("linux-x86_64",)
    assert published_platforms(m, "docker.io/pytorch/pytorch@sha256:" + "a" * 64) == ("linux-x86_64",)
    assert set(published_platforms(m, "nvidia/cuda:12.8.1-devel-ubuntu24.04") or ()) == {"linux-x86_64", "linux-aarch64"}
    assert published_platforms(m, "python:3.12-slim") is None and published_platforms(m, "nvidia/cuda:99.0.0-devel-ubuntu24.04") is None
    # a FROM --platform the image lacks: the build stops at FROM, the platforms stay as the file says
    assert narrowed(("linux-aarch64",), ("linux-x86_64",)) == ("linux-aarch64",)


@pytest.mark.parametrize("word", ["${TV#v}", "${TV##v}", "${TV%.1}", "${TV/v/}", "${TV:-0.20.1}", "${TV:1}"])
def test_a_parameter_expansion_with_an_operator_is_the_shells(tmp_path: Path, word: str):
    # dockerfile-parse puts in the value alone (`v0.20.1#v}`): the shell computes the word, so it is passed over
    rc, out = check(tmp_path, f'FROM python:3.11\nARG TV="v0.20.1"\nRUN pip install "torchvision=={word}"\n')
    assert rc == 0 and "CF000" not in out, out


def test_an_index_the_shell_computes_from_an_arg_is_not_read(tmp_path: Path):
    rc, out = check(tmp_path, 'FROM python:3.11\nARG CUDA="12.1"\nRUN pip install --index-url https://download.pytorch.org/whl/cu${CUDA//./} torch==2.5.1\n')
    assert rc == 0 and "CF003" not in out, out


def test_cmd_and_powershell_lines_are_not_read_as_a_posix_shells(tmp_path: Path):
    # kaolin's tools/windows/Dockerfile.install_wheel: a cmd loop variable is no requirement
    text = 'FROM mcr.microsoft.com/windows/servercore:ltsc2022\nSHELL ["cmd", "/S", "/C"]\nRUN for %f in (kaolin-*.whl) do pip install %f\n'
    assert check(tmp_path, text) == (0, "All checks passed (1 file).\n")
    text = 'FROM python:3.11\nSHELL ["pwsh", "-Command"]\nRUN Get-ChildItem *.whl | ForEach-Object { pip install $_.FullName }\n'
    assert check(tmp_path, text)[0] == 0
    # a POSIX shell named by SHELL is read as before
    rc, out = check(tmp_path, 'FROM python:3.11\nSHELL ["/bin/bash", "-c"]\nRUN pip install "torch>=>2"\n')
    assert rc == 1 and "CF000" in out, out


def test_a_refused_word_is_said_where_the_shell_computes_the_index(tmp_path: Path):
    # open-mmlab/mmpose docker/serve/Dockerfile: `mmcv==${MMCV}}` beside an index URL of `cu${CUDA//./}`
    text = 'FROM python:3.10\nARG MMCV="2.0.0rc4"\nARG CUDA="11.7"\nRUN pip install mmcv==${MMCV}} -f https://download.openmmlab.com/mmcv/dist/cu${CUDA//./}/torch1.13/index.html\n'
    rc, out = check(tmp_path, text)
    assert rc == 1 and "CF000 not a valid requirement: 'mmcv==2.0.0rc4}'" in out, out
