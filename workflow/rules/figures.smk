# Figures (PNG + PDF): one rule per entry of con2.report.artefacts.FIGURES, each from the files its
# builder reads (a table's CSV, the score-runtime measurements) or, for the PCA figure, from the files
# of the runs it draws, never from training code: their records are its inputs, and its param `panels`
# names each run's record, features.npz and scores.csv (no rule declares these two as outputs, so they
# cannot be inputs), the only files it opens. A figure made per dataset (`each`) has a {dataset} wildcard.
# The profile settings a figure is drawn from (report:, ...) are a param of its rule: changing one
# redraws the figures it shapes.


for _name, _figure in FIGURES.items():

    rule:
        name:
            f"figure_{_name}"
        localrule: True
        input:
            **A.inputs(_figure),
        output:
            png=report(f"results/figures/{_figure.stem}.png", caption=A.caption(_name), category="Figures"),
            pdf=f"results/figures/{_figure.stem}.pdf",
        params:
            figure=_name,
            **A.params(_figure),
        log:
            f"results/logs/figures/{_figure.stem}.log",
        message:
            f"figure {A.label(_figure)}"
        conda:
            "../envs/con2.yaml"
        script:
            "../scripts/make_figure.py"
