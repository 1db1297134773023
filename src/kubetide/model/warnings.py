"""Warnings about objects the API server takes but whose controller will never act as their
author expects: a CronJob whose schedule names a date that never comes, an HPA whose metrics the
simulator has no source for. One line each, naming the object and where it was given."""

from __future__ import annotations

from kubetide.model.cronjob import CronJob, never_fires_warning
from kubetide.model.hpa import HorizontalPodAutoscaler, inaction_warning
from kubetide.model.loader import Manifests


def controller_warnings(manifests: list[tuple[str, Manifests]], source: str) -> list[str]:
    """The warnings for every CronJob and HPA in `manifests` ((where, manifests) pairs: a
    scenario's spec.objects and each event's apply)."""
    found: list[str] = []
    for where, loaded in manifests:
        at = f"{source}: {where}"
        cronjobs: list[CronJob] = loaded.other.get("CronJob", [])
        hpas: list[HorizontalPodAutoscaler] = loaded.other.get("HorizontalPodAutoscaler", [])
        found += [w for c in cronjobs if (w := never_fires_warning(c, at)) is not None]
        found += [w for h in hpas if (w := inaction_warning(h, at)) is not None]
    return found
