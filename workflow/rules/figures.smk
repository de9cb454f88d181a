# Figures (PNG + PDF), each from a table's CSV or from run directories, never from training code.


rule per_class_figure:
    """Bars of AUROC per normal class (the paper's CIFAR-10 figure for report.per_class datasets)."""
    localrule: True
    input:
        table="results/tables/per_class_{dataset}.csv",
    output:
        png=report(
            "results/figures/per_class_{dataset}.png",
            caption="../report/per_class.rst",
            category="Figures",
        ),
        pdf="results/figures/per_class_{dataset}.pdf",
    params:
        figure="per_class",
    log:
        "results/logs/figures/per_class_{dataset}.log",
    message:
        "figure per_class_{wildcards.dataset}"
    conda:
        "../envs/con2.yaml"
    script:
        "../scripts/make_figure.py"


rule silhouette_figure:
    """Context silhouette per dataset and variant."""
    localrule: True
    input:
        table="results/tables/silhouette.csv",
    output:
        png=report(
            "results/figures/silhouette.png",
            caption="../report/silhouette.rst",
            category="Figures",
        ),
        pdf="results/figures/silhouette.pdf",
    params:
        figure="silhouette",
    log:
        "results/logs/figures/silhouette.log",
    message:
        "figure silhouette"
    conda:
        "../envs/con2.yaml"
    script:
        "../scripts/make_figure.py"


rule score_runtime_figure:
    """S_NND vs S_LH runtime and memory scaling."""
    localrule: True
    input:
        table=rules.score_runtime.output.csv,
    output:
        png=report(
            "results/figures/score_runtime.png",
            caption="../report/score_runtime.rst",
            category="Figures",
        ),
        pdf="results/figures/score_runtime.pdf",
    params:
        figure="score_runtime",
    log:
        "results/logs/figures/score_runtime.log",
    message:
        "figure score_runtime"
    conda:
        "../envs/con2.yaml"
    script:
        "../scripts/make_figure.py"


rule pca_figure:
    """2-D PCA of the representations in both contexts, each test image joined to its twin."""
    localrule: True
    input:
        records=pca_records,
        status=status_input,
    output:
        png=report(
            "results/figures/pca_representations.png",
            caption="../report/pca_representations.rst",
            category="Figures",
        ),
        pdf="results/figures/pca_representations.pdf",
    params:
        figure="pca",
        panels=pca_panels,
        max_points=REPORT.get("pca_max_points", 300),
    log:
        "results/logs/figures/pca_representations.log",
    message:
        "figure pca_representations"
    conda:
        "../envs/con2.yaml"
    script:
        "../scripts/make_figure.py"
