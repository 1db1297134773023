# syntax=docker/dockerfile:1
# The image deploy/ runs: `docker build -t REGISTRY/kubetide:TAG .` (see docs/install.md).

# Stage 1: wheels for kubetide and every dependency. Only this stage has pip's build
# environment; nothing of it reaches the final image.
FROM python:3.11-slim AS wheels
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
# With the aws extra (boto3): one image for every overlay in deploy/.
RUN pip wheel --no-cache-dir --wheel-dir /wheels ".[aws]"

# Stage 2: the runtime. The wheels are bind-mounted for the install, so they are in no layer.
FROM python:3.11-slim
# A fixed UID (the one the Deployment's runAsUser names), so that the kubelet can verify
# runAsNonRoot without looking inside the image.
RUN groupadd --system --gid 65532 kubetide \
    && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin kubetide
# pip, setuptools and wheel are only needed to install: none of them is left in the image.
RUN --mount=type=bind,from=wheels,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links=/wheels "kubetide[aws]" \
    && pip uninstall --yes pip setuptools wheel
# The root filesystem is read-only in the Deployment: do not try to write .pyc files at run
# time (pip compiled them at install), and flush logs at once so `kubectl logs` is current.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 65532:65532
EXPOSE 8085
ENTRYPOINT ["kubetide"]
CMD ["run"]
