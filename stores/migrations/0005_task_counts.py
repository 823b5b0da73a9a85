"""Counters of tasks per owner and state, kept by triggers (see ``TaskCount``).

The triggers are created before the counters are filled, in the migration's
transaction: on PostgreSQL ``CREATE TRIGGER`` locks the table against writes until
the commit, so no row is counted twice or missed; SQLite has one writer at a time.
Other databases get the table but no triggers: the store counts rows there
(``stores.orm.counted_by_triggers``).
"""

from django.db import migrations, models

TASKS = "stores_taskrecord"
COUNTS = "stores_taskrecord_count"

#: PostgreSQL: statement-level triggers over the statement's transition tables, so a
#: bulk write (a COPY, a QuerySet.delete()) adds its counts once per (owner, state,
#: slot), not once per row (which, in one transaction, made each counter row a chain
#: of versions to walk: quadratic). The counter rows are upserted in (owner, state,
#: slot) order, so two transactions never wait for each other's rows in a cycle.
_PG_UPSERT = f"""
    INSERT INTO {COUNTS} (owner, state, slot, n)
        SELECT owner, state, slot, SUM(d) FROM ({{rows}}) AS changed
        GROUP BY owner, state, slot HAVING SUM(d) <> 0 ORDER BY owner, state, slot
        ON CONFLICT (owner, state, slot) DO UPDATE SET n = {COUNTS}.n + EXCLUDED.n;
"""
_PG_NEW = "SELECT owner, state, hashtext(id) & 15 AS slot, 1 AS d FROM new_rows"
_PG_OLD = "SELECT owner, state, hashtext(id) & 15 AS slot, -1 AS d FROM old_rows"
_PG_FUNCTIONS = {
    "insert": _PG_UPSERT.format(rows=_PG_NEW),
    "delete": _PG_UPSERT.format(rows=_PG_OLD),
    "update": _PG_UPSERT.format(rows=f"{_PG_NEW} UNION ALL {_PG_OLD}"),
}
_PG_REFERENCING = {
    "insert": "NEW TABLE AS new_rows",
    "delete": "OLD TABLE AS old_rows",
    "update": "OLD TABLE AS old_rows NEW TABLE AS new_rows",
}
POSTGRES = [
    sql
    for op, body in _PG_FUNCTIONS.items()
    for sql in (
        f"CREATE OR REPLACE FUNCTION stores_taskcount_{op}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        f"BEGIN{body}    RETURN NULL;\nEND\n$$;",
        f"CREATE TRIGGER stores_taskcount_{op} AFTER {op.upper()} ON {TASKS} "
        f"REFERENCING {_PG_REFERENCING[op]} FOR EACH STATEMENT EXECUTE FUNCTION stores_taskcount_{op}();",
    )
] + [
    # TRUNCATE fires no row or transition-table trigger: it empties the counts too.
    f"CREATE OR REPLACE FUNCTION stores_taskcount_truncate() RETURNS trigger LANGUAGE plpgsql AS $$\n"
    f"BEGIN\n    UPDATE {COUNTS} SET n = 0 WHERE n <> 0;\n    RETURN NULL;\nEND\n$$;",
    f"CREATE TRIGGER stores_taskcount_truncate AFTER TRUNCATE ON {TASKS} "
    "FOR EACH STATEMENT EXECUTE FUNCTION stores_taskcount_truncate();",
    f"""
INSERT INTO {COUNTS} (owner, state, slot, n)
    SELECT owner, state, hashtext(id) & 15, COUNT(*) FROM {TASKS} GROUP BY 1, 2, 3;
""",
]
POSTGRES_REVERSE = [
    sql
    for op in [*_PG_FUNCTIONS, "truncate"]
    for sql in (
        f"DROP TRIGGER IF EXISTS stores_taskcount_{op} ON {TASKS};",
        f"DROP FUNCTION IF EXISTS stores_taskcount_{op}();",
    )
]

SQLITE = [
    f"""
CREATE TRIGGER stores_taskcount_insert AFTER INSERT ON {TASKS} BEGIN
    INSERT INTO {COUNTS} (owner, state, slot, n) VALUES (NEW.owner, NEW.state, 0, 1)
        ON CONFLICT (owner, state, slot) DO UPDATE SET n = n + 1;
END;
""",
    f"""
CREATE TRIGGER stores_taskcount_delete AFTER DELETE ON {TASKS} BEGIN
    INSERT INTO {COUNTS} (owner, state, slot, n) VALUES (OLD.owner, OLD.state, 0, -1)
        ON CONFLICT (owner, state, slot) DO UPDATE SET n = n - 1;
END;
""",
    f"""
CREATE TRIGGER stores_taskcount_update AFTER UPDATE OF owner, state ON {TASKS}
    WHEN OLD.owner IS NOT NEW.owner OR OLD.state IS NOT NEW.state BEGIN
    INSERT INTO {COUNTS} (owner, state, slot, n) VALUES (OLD.owner, OLD.state, 0, -1)
        ON CONFLICT (owner, state, slot) DO UPDATE SET n = n - 1;
    INSERT INTO {COUNTS} (owner, state, slot, n) VALUES (NEW.owner, NEW.state, 0, 1)
        ON CONFLICT (owner, state, slot) DO UPDATE SET n = n + 1;
END;
""",
    # Only the triggers change the counts: a DELETE of counter rows is ignored (Django's
    # flush on SQLite deletes every table's rows in no set order; the task rows' own
    # DELETE brings the counts to 0 whichever goes first).
    f"""
CREATE TRIGGER stores_taskcount_keep BEFORE DELETE ON {COUNTS} BEGIN
    SELECT RAISE(IGNORE);
END;
""",
    f"INSERT INTO {COUNTS} (owner, state, slot, n) SELECT owner, state, 0, COUNT(*) FROM {TASKS} GROUP BY 1, 2;",
]
SQLITE_REVERSE = [
    f"DROP TRIGGER IF EXISTS stores_taskcount_{name};" for name in ("insert", "delete", "update", "keep")
]


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    statements = POSTGRES if vendor == "postgresql" else SQLITE if vendor == "sqlite" else []
    if vendor == "postgresql":
        schema_editor.execute(f"LOCK TABLE {TASKS} IN SHARE ROW EXCLUSIVE MODE")
    for sql in statements:
        schema_editor.execute(sql)


def uninstall(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for sql in POSTGRES_REVERSE if vendor == "postgresql" else SQLITE_REVERSE if vendor == "sqlite" else []:
        schema_editor.execute(sql)


class Migration(migrations.Migration):

    dependencies = [
        ('stores', '0004_task_text_search'),
    ]

    operations = [
        migrations.CreateModel(
            name='TaskCount',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('owner', models.CharField(max_length=255)),
                ('state', models.CharField(max_length=32)),
                ('slot', models.SmallIntegerField(default=0)),
                ('n', models.BigIntegerField(default=0)),
            ],
            options={
                'db_table': 'stores_taskrecord_count',
                'verbose_name': 'task count',
                'constraints': [models.UniqueConstraint(fields=('owner', 'state', 'slot'), name='stores_taskcount_uniq')],
            },
        ),
        migrations.RunPython(install, uninstall),
    ]
