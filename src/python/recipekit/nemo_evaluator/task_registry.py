"""The task names of nemo-evaluator-launcher 0.2.6's packaged registry, by harness.

Data, not code: the ``name`` and ``harness`` of every task in the launcher's
``resources/all_tasks_irs.yaml`` at tag ``nemo-evaluator-launcher-v0.2.6`` (NVIDIA-NeMo/Evaluator
commit ab491cbb0413; metadata ``num_tasks: 421``, ``num_harnesses: 23``). ``nemo-evaluator-launcher
ls tasks`` prints the same list; regenerate this file when ``LAUNCHER_VERSION`` changes.
"""

TASKS_BY_HARNESS: dict[str, tuple[str, ...]] = {
    "lm-evaluation-harness": tuple(
        """
        mmlu mmlu_instruct mmlu_instruct_completions mmlu_cot_0_shot_chat ifeval mmlu_pro
        mmlu_pro_instruct mmlu_redux mmlu_redux_instruct m_mmlu_id_str_chat
        m_mmlu_id_str_completions gsm8k gsm8k_cot_instruct gsm8k_cot_zeroshot gsm8k_cot_llama
        gsm8k_cot_zeroshot_llama humaneval_instruct mbpp_plus_chat mbpp_plus_completions mgsm
        mgsm_cot_chat mgsm_cot_completions wikilingua winogrande arc_challenge
        arc_challenge_chat hellaswag truthfulqa bbh bbh_instruct musr gpqa gpqa_diamond_cot
        commonsense_qa openbookqa mmlu_logits piqa social_iqa adlr_agieval_en_cot
        adlr_math_500_4_shot_sampled adlr_race adlr_truthfulqa_mc2
        adlr_arc_challenge_llama_25_shot adlr_gpqa_diamond_cot_5_shot adlr_mmlu
        adlr_mmlu_pro_5_shot_base adlr_minerva_math_nemo_4_shot adlr_gsm8k_cot_8_shot
        adlr_humaneval_greedy adlr_humaneval_sampled adlr_mbpp_sanitized_3_shot_greedy
        adlr_mbpp_sanitized_3_shot_sampled adlr_global_mmlu_lite_5_shot
        adlr_mgsm_native_cot_8_shot adlr_commonsense_qa_7_shot adlr_winogrande_5_shot bbq_chat
        bbq_completions arc_multilingual hellaswag_multilingual mmlu_prox_chat
        mmlu_prox_completions mmlu_prox_fr_chat mmlu_prox_fr_completions mmlu_prox_de_chat
        mmlu_prox_de_completions mmlu_prox_it_chat mmlu_prox_it_completions mmlu_prox_ja_chat
        mmlu_prox_ja_completions mmlu_prox_es_chat mmlu_prox_es_completions global_mmlu_full
        global_mmlu_full_am global_mmlu_full_ar global_mmlu_full_bn global_mmlu_full_cs
        global_mmlu_full_de global_mmlu_full_el global_mmlu_full_en global_mmlu_full_es
        global_mmlu_full_fa global_mmlu_full_fil global_mmlu_full_fr global_mmlu_full_ha
        global_mmlu_full_he global_mmlu_full_hi global_mmlu_full_id global_mmlu_full_ig
        global_mmlu_full_it global_mmlu_full_ja global_mmlu_full_ko global_mmlu_full_ky
        global_mmlu_full_lt global_mmlu_full_mg global_mmlu_full_ms global_mmlu_full_ne
        global_mmlu_full_nl global_mmlu_full_ny global_mmlu_full_pl global_mmlu_full_pt
        global_mmlu_full_ro global_mmlu_full_ru global_mmlu_full_si global_mmlu_full_sn
        global_mmlu_full_so global_mmlu_full_sr global_mmlu_full_sv global_mmlu_full_sw
        global_mmlu_full_te global_mmlu_full_tr global_mmlu_full_uk global_mmlu_full_vi
        global_mmlu_full_yo global_mmlu_full_zh global_mmlu global_mmlu_ar global_mmlu_bn
        global_mmlu_de global_mmlu_en global_mmlu_es global_mmlu_fr global_mmlu_hi
        global_mmlu_id global_mmlu_it global_mmlu_ja global_mmlu_ko global_mmlu_pt
        global_mmlu_sw global_mmlu_yo global_mmlu_zh agieval wikitext
        """.split()
    ),
    "mtbench": tuple(
        """
        mtbench mtbench-cor1
        """.split()
    ),
    "ifbench": tuple(
        """
        ifbench ifbench_aa_v2
        """.split()
    ),
    "simple_evals": tuple(
        """
        AIME_2025 AIME_2024 AA_AIME_2024 AA_math_test_500 math_test_500 mgsm humaneval
        humanevalplus mmlu_pro mmlu_am mmlu_ar mmlu_bn mmlu_cs mmlu_de mmlu_el mmlu_en mmlu_es
        mmlu_fa mmlu_fil mmlu_fr mmlu_ha mmlu_he mmlu_hi mmlu_id mmlu_ig mmlu_it mmlu_ja mmlu_ko
        mmlu_ky mmlu_lt mmlu_mg mmlu_ms mmlu_ne mmlu_nl mmlu_ny mmlu_pl mmlu_pt mmlu_ro mmlu_ru
        mmlu_si mmlu_sn mmlu_so mmlu_sr mmlu_sv mmlu_sw mmlu_te mmlu_tr mmlu_uk mmlu_vi mmlu_yo
        mmlu_ar-lite mmlu_bn-lite mmlu_de-lite mmlu_en-lite mmlu_es-lite mmlu_fr-lite
        mmlu_hi-lite mmlu_id-lite mmlu_it-lite mmlu_ja-lite mmlu_ko-lite mmlu_my-lite
        mmlu_pt-lite mmlu_sw-lite mmlu_yo-lite mmlu_zh-lite mmlu gpqa_diamond gpqa_extended
        gpqa_main simpleqa aime_2025_nemo aime_2024_nemo math_test_500_nemo gpqa_diamond_nemo
        gpqa_diamond_aa_v2_llama_4 gpqa_diamond_aa_v2 AIME_2025_aa_v2 mgsm_aa_v2 mmlu_pro_aa_v2
        mmlu_llama_4 mmlu_pro_llama_4 healthbench healthbench_consensus healthbench_hard
        browsecomp gpqa_diamond_aa_v3 mmlu_pro_aa_v3
        """.split()
    ),
    "bigcode-evaluation-harness": tuple(
        """
        humaneval humaneval_instruct humanevalplus mbpp-chat mbpp-completions mbppplus-chat
        mbppplus-completions mbppplus_nemo multiple-py multiple-sh multiple-cpp multiple-cs
        multiple-d multiple-go multiple-java multiple-js multiple-jl multiple-lua multiple-pl
        multiple-php multiple-r multiple-rkt multiple-rb multiple-rs multiple-scala
        multiple-swift multiple-ts
        """.split()
    ),
    "livecodebench": tuple(
        """
        codegeneration_release_latest codegeneration_release_v1 codegeneration_release_v2
        codegeneration_release_v3 codegeneration_release_v4 codegeneration_release_v5
        codegeneration_release_v6 codegeneration_notfast testoutputprediction codeexecution_v2
        codeexecution_v2_cot livecodebench_0724_0125 livecodebench_aa_v2 livecodebench_0824_0225
        """.split()
    ),
    "scicode": tuple(
        """
        scicode scicode_background scicode_aa_v2
        """.split()
    ),
    "hle": tuple(
        """
        hle hle_aa_v2
        """.split()
    ),
    "bfcl": tuple(
        """
        bfclv3 bfclv3_ast bfclv3_ast_prompting bfclv2 bfclv2_ast bfclv2_ast_prompting
        """.split()
    ),
    "profbench": tuple(
        """
        report_generation llm_judge
        """.split()
    ),
    "vlmevalkit": tuple(
        """
        ai2d_judge chartqa mathvista-mini mmmu_judge ocrbench ocr_reasoning slidevqa
        """.split()
    ),
    "garak": tuple(
        """
        garak garak-completions
        """.split()
    ),
    "nemo_skills": tuple(
        """
        ns_aime2024 ns_aime2025 ns_aime2026 ns_hmmt_feb2025 ns_gpqa ns_bfcl_v3 ns_bfcl_v4
        ns_livecodebench ns_livecodebench_v5 ns_livecodebench_aa ns_hle ns_hle_aa ns_ruler
        ns_mmlu ns_mmlu_pro ns_arena_hard_v2 ns_scicode ns_aa_lcr ns_ifbench ns_wmt24pp
        ns_wmt24pp_comet ns_ifeval ns_mmlu_prox ns_mmmu_pro ns_critpt ns_omniscience
        """.split()
    ),
    "safety_eval": tuple(
        """
        aegis_v2 aegis_v2_completions aegis_v2_reasoning wildguard wildguard_completions
        compliance
        """.split()
    ),
    "helm": tuple(
        """
        medcalc_bench medec head_qa medbullets pubmed_qa ehr_sql race_based_med medhallu
        mtsamples_replicate aci_bench mtsamples_procedures medication_qa
        med_dialog_healthcaremagic med_dialog_icliniq medi_qa
        """.split()
    ),
    "tooltalk": tuple(
        """
        tooltalk
        """.split()
    ),
    "genai_perf_eval": tuple(
        """
        genai_perf_summarization genai_perf_generation genai_perf_summarization_completions
        genai_perf_generation_completions
        """.split()
    ),
    "mmath": tuple(
        """
        mmath_en mmath_zh mmath_ar mmath_es mmath_fr mmath_ja mmath_ko mmath_pt mmath_th
        mmath_vi
        """.split()
    ),
    "tau2_bench": tuple(
        """
        tau2_bench_telecom tau2_bench_airline tau2_bench_retail
        """.split()
    ),
    "ruler": tuple(
        """
        ruler-chat ruler-completions ruler-4k-chat ruler-4k-completions ruler-8k-chat
        ruler-8k-completions ruler-16k-chat ruler-16k-completions ruler-32k-chat
        ruler-32k-completions ruler-64k-chat ruler-64k-completions ruler-128k-chat
        ruler-128k-completions ruler-256k-chat ruler-256k-completions ruler-512k-chat
        ruler-512k-completions ruler-1m-chat ruler-1m-completions
        """.split()
    ),
    "codec": tuple(
        """
        mmlu_test gpqa_diamond gsm8k_train gsm8k_test ifeval mmlu_pro_test openai_humaneval
        frames hellaswag_test hellaswag_train aime_2025 aime_2024 livecodebench_v1
        livecodebench_v5 bfcl_v3 bbq reward_bench_v1 reward_bench_v2 math_500_problem
        math_500_solution swebench_test swebench_train hle ifbench scicode terminalbench
        taubench
        """.split()
    ),
    "mteb": tuple(
        """
        fiqa nano_fiqa hotpotqa nq miracl miracl_lite mlqa mldr custom_beir_task MTEB
        MTEB_ENG_RETRIEVAL MTEB_NL_RETRIEVAL MMTEB RTEB MTEB_VDR ViDoReV1 ViDoReV2 ViDoReV3
        ViDoReV3_Text ViDoReV3_Text_Image
        """.split()
    ),
    "AA-LCR": tuple(
        """
        aa_lcr
        """.split()
    ),
}
