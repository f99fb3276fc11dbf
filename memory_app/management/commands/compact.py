"""Find and resolve near-duplicate memories across whole scopes (the same code as the Celery job)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from memory_app.models import MaintenanceJob
from memory_app.models.jobs import JobKind, JobStatus
from memory_app.selectors.compaction import compaction_scopes
from memory_app.services.maintenance.compaction import PlannedAction, ScopeReport, judge_tools, scope_compact
from memory_app.services.maintenance.jobs import (
    maintenance_job_create,
    maintenance_job_retry,
    maintenance_job_run,
)

from ._ops import add_tenant_argument, tenants


class Command(BaseCommand):
    help = (
        "Compact memories: find near-duplicate groups in every scope (or the scopes given) and let the "
        "relation judge merge, supersede or queue them for review. Dry run by default: prints what "
        "it would do. --apply acts (as a resumable job); --queue-only sends groups to the review "
        "queue instead of merging; --enqueue hands the job to the Celery workers."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_tenant_argument(parser)
        parser.add_argument("--user-id", help="only this user's memories")
        parser.add_argument("--namespace", help="only this namespace")
        parser.add_argument("--kind", choices=("episodic", "semantic"), help="only this kind")
        parser.add_argument("--judge", choices=("offline", "llm"), help="relation judge (default: setting)")
        parser.add_argument("--radius", type=float, help="cosine-distance radius (default: calibrated)")
        parser.add_argument("--queue-only", action="store_true", help="queue groups for review, never merge")
        parser.add_argument("--apply", action="store_true", help="act (default: dry run)")
        parser.add_argument("--enqueue", action="store_true", help="with --apply: queue jobs for the workers")
        parser.add_argument("--resume", type=int, metavar="JOB_ID", help="resume an interrupted job")
        parser.add_argument("--show", type=int, default=50, help="how many planned actions to print")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["radius"] is not None and not 0 < options["radius"] < 1:
            raise CommandError("--radius must be between 0 and 1")
        if options["resume"]:
            self._run_job(options["resume"])
            return
        params = {
            k: options[k]
            for k in ("user_id", "namespace", "kind", "judge", "radius")
            if options[k] is not None
        }
        kind = JobKind.REVIEW_DETECTION if options["queue_only"] else JobKind.COMPACTION
        for tenant in tenants(options["tenant"]):
            if not options["apply"]:
                self._plan(tenant, params, options["show"])
                continue
            job = maintenance_job_create(kind=kind, tenant=tenant, params=params, enqueue=options["enqueue"])
            if options["enqueue"]:
                job.refresh_from_db()
                if job.status == JobStatus.FAILED:
                    raise CommandError(
                        f"tenant {tenant.slug}: job {job.pk} {job.error.rstrip('.')}. The job is marked "
                        f"failed; run it in this process with `manage.py compact --resume {job.pk}`, or "
                        f"queue it again once the broker is reachable."
                    )
                self.stdout.write(f"tenant {tenant.slug}: queued job {job.pk}")
            else:
                self._run_job(job.pk)

    def _scopes(self, tenant: Any, params: dict[str, Any]) -> list[Any]:
        scope_filter = {k: params.get(k) for k in ("user_id", "namespace", "kind")}
        return compaction_scopes(tenant=tenant, **scope_filter)

    def _plan(self, tenant: Any, params: dict[str, Any], show: int) -> None:
        tools = judge_tools(judge_name=params.get("judge"), radius=params.get("radius"))
        scopes = self._scopes(tenant, params)
        actions: list[PlannedAction] = []
        totals = ScopeReport(scope=None)  # type: ignore[arg-type]
        for scope, _count in tqdm(scopes, desc=f"{tenant.slug} scopes", unit="scope", disable=None):
            report = scope_compact(tenant=tenant, scope=scope, tools=tools, mode="plan")
            actions.extend(report.actions)
            for name in ("rows", "pairs_examined", "pairs", "groups"):
                setattr(totals, name, getattr(totals, name) + getattr(report, name))
        self.stdout.write(
            f"tenant {tenant.slug}: {len(scopes)} scopes, {totals.rows} memories, "
            f"{totals.pairs_examined} pairs examined, {totals.pairs} within radius {tools.radius:.3f}, "
            f"{totals.groups} groups"
        )
        for action in actions[:show]:
            self.stdout.write(
                f"  would {action.action} {list(action.memory_ids)} ({action.relation}, "
                f"confidence {action.confidence:.2f}):"
            )
            for text in action.texts:
                self.stdout.write(f"      - {text[:100]}")
            if action.text:
                self.stdout.write(f"      = {action.text[:100]}")
        if len(actions) > show:
            self.stdout.write(f"  ... and {len(actions) - show} more")
        counts = {a: sum(x.action == a for x in actions) for a in ("merge", "supersede", "review")}
        self.stdout.write(
            f"dry run: would merge {counts['merge']} groups, supersede {counts['supersede']}, "
            f"queue {counts['review']} for review; nothing written (use --apply)"
        )

    def _run_job(self, job_id: int) -> None:
        job = MaintenanceJob.objects.filter(pk=job_id).first()
        if job is None:
            raise CommandError(f"no job {job_id}")
        if job.status == JobStatus.FAILED:  # e.g. the broker refused it: resume it here
            job = maintenance_job_retry(job_id=job_id, enqueue=False)
        total = len(self._scopes(job.tenant, job.params)) if job.tenant else None
        with tqdm(total=total, desc=f"job {job_id}", unit="scope", disable=None) as bar:
            done = maintenance_job_run(job_id=job_id, on_scope=lambda _report: bar.update(1))
        if done is None:
            raise CommandError(f"job {job_id} is {job.status} or running elsewhere; nothing done")
        self.stdout.write(f"job {done.pk} ({done.kind}) {done.status}: {done.stats}")
