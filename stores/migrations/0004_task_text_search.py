"""A full-text index on the text of the ORM store's tasks, on PostgreSQL only.

The admin's search (``stores.admin.search.orm_text_search``) matches words against
``to_tsvector('simple', jsonb_path_query_array(task, 'lax $.**.text'))``: every string
under a ``text`` key of the task (the text parts of its messages and artifacts). This
GIN index is built on exactly that expression, so PostgreSQL answers from the index.
Other databases get nothing (SQLite searches with ``LIKE``), hence ``RunPython`` with a
vendor check rather than a model ``Index`` (a GIN expression index is PostgreSQL's alone).
"""

from django.db import migrations

INDEX = "stores_task_text_fts_idx"
DOCUMENT = "to_tsvector('simple'::regconfig, jsonb_path_query_array(task, 'lax $.**.text'::jsonpath))"


def create_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        table = schema_editor.quote_name(apps.get_model("stores", "TaskRecord")._meta.db_table)
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {INDEX} ON {table} USING gin (({DOCUMENT}))")


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [
        ("stores", "0003_task_owner_version"),
    ]

    operations = [
        migrations.RunPython(create_index, drop_index, elidable=False),
    ]
