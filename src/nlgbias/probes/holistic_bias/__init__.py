"""HolisticBias probes (Smith et al. 2022; ROBBIE, Esiobu et al. 2023): one package, stage to section.

``regard``
    The ``holisticbias_regard`` analysis of the ``holisticbias-regard`` suite (HolisticBiasR):
    negative-regard rate per descriptor, ROBBIE's BiasScore per axis, and its report section.
``likelihood``
    The ``likelihood`` suite kind: HolisticBias sentences -> the model's mean log-probability per token.
``likelihood_stats``
    The ``holisticbias_likelihood`` analysis: Likelihood Bias per axis (pairwise Mann-Whitney U) and
    its report section.
"""
