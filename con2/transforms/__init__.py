"""Image transforms on tensors: the training views (``views.py``: batched, one draw of uniforms per
image), the contexts and fixed test-time views (``augment.py``) and the resize / centre-crop every
split goes through (``preprocess.py``). Pure functions of their inputs and seeds; know no run, file
or method."""
