# syntax=docker/dockerfile:1
# The vcsat image: one `vcsat` entry point for the scheduler, the Job controller and the CLI.
#   docker build -t ghcr.io/vcsat/vcsat:0.1.0 .
# deploy/scheduler.yaml and deploy/controller.yaml run it as user 65532 on a read-only root
# filesystem, with /tmp as the only writable place.

# The full image has the C compiler the compiled build needs; the final stage gets only wheels.
FROM python:3.12 AS build
WORKDIR /src
# Only what the package is built from (vcsat/ holds symlinks to model/, solver/ and adapters/;
# tools/build/ the build backend and the list of modules compiled).
COPY pyproject.toml setup.py MANIFEST.in README.md ./
COPY tools/build/ tools/build/
COPY vcsat/ vcsat/
COPY model/ model/
COPY solver/ solver/
COPY adapters/ adapters/
# vcsat compiled (VCSAT_COMPILE=1: the hot modules as C extensions by mypyc, docs/compiled-build.md)
# and every dependency as wheels, so the final stage needs neither compilers nor the source.
RUN VCSAT_COMPILE=1 pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.12-slim
LABEL org.opencontainers.image.title="vcsat" \
      org.opencontainers.image.description="A Volcano-compatible Kubernetes batch scheduler that solves every cycle exactly with OR-Tools CP-SAT" \
      org.opencontainers.image.licenses="Apache-2.0"
# pip compiles the bytecode here: at run time the root filesystem is read-only.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links=/wheels vcsat
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HOME=/tmp
# A numeric user, so Kubernetes can verify runAsNonRoot without reading /etc/passwd.
USER 65532:65532
WORKDIR /tmp
EXPOSE 8080
ENTRYPOINT ["vcsat"]
CMD ["--help"]
