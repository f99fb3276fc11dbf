"""Memory pages: the ModelAdmins (admins.py), edits and deletes through the services (forms.py),
the lineage tree and a change's undo (lineage.py).

Modules: admins, forms, lineage.
"""
